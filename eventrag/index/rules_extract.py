"""No-LLM extraction for big corpora on a CPU: entities and dates by cheap rules, events from sentences.

- entities: the document title, and capitalised name phrases ("Ermengarde of Tours", "New York City");
- events: sentences that carry a date, or that have a verb between two entities;
- relations: BEFORE between dated events of a chunk in time order, CAUSES from a sentence's event to the
  next one's when that one takes it as its cause ("As a result, ...", `eventrag.connectives`),
  PARTICIPATES_IN/LOCATED_IN from the sentence structure.
Precision is lower than the LLM's, but indexing costs milliseconds per chunk.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from eventrag.connectives import causal_links
from eventrag.dates import find_dates
from eventrag.index.chunking import split_sentences
from eventrag.index.extract import entity_key, event_key, norm_name
from eventrag.schema import Chunk, ChunkExtraction, Entity, Event, EventTime, Participant, Relation

_CONNECT = r"(?:of|de|du|des|la|le|von|van|der|den|da|di|del|y|and|the|for|&|-|')"
_NAME_RE = re.compile(
    rf"\b([A-Z\u00C0-\u00DE][\w\u00C0-\u024F'.-]*(?:[ \t]+(?:{_CONNECT}[ \t]+)?[A-Z\u00C0-\u00DE0-9][\w\u00C0-\u024F'.-]*)*)"
)
_STOP = {
    "the", "a", "an", "in", "on", "at", "he", "she", "it", "they", "his", "her", "its", "their", "this", "that",
    "these", "those", "there", "after", "before", "during", "when", "while", "however", "although", "as", "by",
    "for", "from", "with", "of", "to", "and", "but", "or", "if", "then", "also", "since", "until", "following",
    "born", "died", "according", "between", "later", "early", "late", "many", "some", "most", "both", "each",
    "one", "two", "three", "we", "i", "you", "our", "my", "who", "what", "which", "where", "why", "how", "is",
    "was", "were", "are", "be", "not", "no", "yes", "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december", "monday", "tuesday", "wednesday",
    "thursday", "friday", "saturday", "sunday", "ignore", "all", "any", "new", "because", "therefore", "thus",
    "meanwhile", "despite", "under", "over", "into", "onto", "upon", "within", "without", "among", "against",
}
_CAUSAL = re.compile(r"\b(because|due to|as a result|resulted in|results in|led to|leads to|caused|causes|"
                     r"therefore|consequently|so that|thanks to|owing to|triggered|prompted)\b", re.I)
_VERBISH = re.compile(r"\b([a-z]+(?:ed|es|s)|won|began|became|made|took|gave|met|left|built|founded|wrote|"
                      r"married|joined|led|fought|signed|released|directed|born|died|moved)\b")
_META_LINE = re.compile(r"^\s*(date|published|author|by|source)\s*:", re.I)
_LOC_PREP = re.compile(r"\b(?:in|at|near)\s+$")


def _clean(name: str) -> str:
    words = re.sub(r"'s$", "", name.strip(" .,'-")).split()
    while words and (words[0].lower() in _STOP or words[0].isdigit()):
        words = words[1:]
    while words and (words[-1].lower() in {"of", "de", "and", "the", "for", "&", "-", "'"} or words[-1].isdigit()):
        words = words[:-1]
    return " ".join(words)


def find_entities(sentence: str) -> list[tuple[int, str]]:
    """(offset, name) of capitalised name phrases in a sentence."""
    out: list[tuple[int, str]] = []
    for m in _NAME_RE.finditer(sentence):
        name = _clean(m.group(1))
        if not name or len(name) < 2 or name.lower() in _STOP or name.isdigit():
            continue
        if len(name) > 80:
            continue
        out.append((m.start(1) + m.group(1).find(name.split()[0]), name))
    return out


def _content(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]{4,}", text.lower()) if w not in _STOP}


def causal_relations(previous: Event, event: Event, chunk_id: str) -> list[Relation]:
    """CAUSES between the previous sentence's event and this one, when this sentence links to it:
    - from the previous one when this sentence takes it as its cause, by an opener ("As a result, ...",
      "This forced ...") or by a cause that names what it told ("Because the station failed, ..." after
      the station's flooding);
    - to the previous one, weaker, when this sentence opens with its own cause ("Because the flooding had
      put the station out of action, water could no longer be drained ..." after "The council closed the
      road"): what it tells explains the statement before it.
    A link told inside one sentence ("X because Y") joins no two events: one event per sentence cannot hold it."""
    before = _content(previous.description)
    links = causal_links(event.description, previous.description)
    weights = [link.weight for link in links
               if link.across or (len(_content(link.cause) & before) * 2 >= len(_content(link.cause)) > 0)]
    if weights:
        return [Relation(source=previous.event_id, target=event.event_id, type="CAUSES", chunk_ids=[chunk_id],
                         weight=round(0.8 * max(weights), 3))]
    opening = [link for link in links if event.description.lower().startswith(link.connective)
               and link.connective not in {"after", "following", "since"}]
    if opening:
        return [Relation(source=event.event_id, target=previous.event_id, type="CAUSES", chunk_ids=[chunk_id],
                         weight=round(0.5 * opening[0].weight, 3))]
    return []


class RuleExtractor:
    """Cheap NLP extraction; deterministic and fast enough for thousands of passages on a CPU."""

    name = "rules"

    def extract(self, chunk: Chunk, doc_date: str | None = None) -> ChunkExtraction:
        out = ChunkExtraction(chunk_id=chunk.chunk_id)
        ents: dict[str, Entity] = {}
        title = chunk.title.strip()
        if title:
            first = split_sentences(chunk.text)[:1]
            _add_entity(ents, chunk, title, "OTHER", chunk.text[first[0][0]:first[0][1]] if first else "")
        dated: list[Event] = []
        prev_event: Event | None = None
        for s, e in split_sentences(chunk.text):
            ev = _sentence_event(chunk, s, chunk.text[s:e], title, ents, out, prev_event)
            if ev is not None and ev.time.start:
                dated.append(ev)
            prev_event = ev
        dated.sort(key=lambda x: x.time.start or "")
        for a, b in zip(dated, dated[1:], strict=False):
            if (a.time.end or a.time.start or "") < (b.time.start or ""):
                out.relations.append(Relation(source=a.event_id, target=b.event_id, type="BEFORE",
                                              chunk_ids=[chunk.chunk_id], weight=0.8))
        out.entities = list(ents.values())
        return out

    def extract_many(self, items: Iterable[tuple[Chunk, str | None]]) -> Iterator[ChunkExtraction]:
        for chunk, doc_date in items:
            yield self.extract(chunk, doc_date)


def _add_entity(ents: dict[str, Entity], chunk: Chunk, name: str, etype: str = "OTHER", desc: str = "") -> Entity:
    key = norm_name(name)
    if key not in ents:
        ents[key] = Entity(entity_id=entity_key(name), name=name, type=etype, description=desc[:300],
                           chunk_ids=[chunk.chunk_id], doc_ids=[chunk.doc_id])
    return ents[key]


def _sentence_event(chunk: Chunk, start: int, sent: str, title: str, ents: dict[str, Entity],
                    out: ChunkExtraction, prev_event: Event | None) -> Event | None:
    """The sentence's names become entities; a sentence with a date, a verb between two names or a
    causal cue becomes an event (added to `out` with its relations, CAUSES to `prev_event` on a cue)."""
    dates = find_dates(sent)
    masked = sent
    for ds, de, _t in dates:  # dates are not names
        masked = masked[:ds] + " " * (de - ds) + masked[de:]
    names = find_entities(masked)
    for _, n in names:
        _add_entity(ents, chunk, n)
    if sent.lstrip().startswith("#") or _META_LINE.match(sent):
        return None  # headings and "Date: ..." lines are metadata, not events
    cue = _CAUSAL.search(sent)
    has_verb_between = len(names) >= 2 and bool(_VERBISH.search(sent[names[0][0] + len(names[0][1]):names[1][0]]))
    if not dates and not has_verb_between and not (cue and names):
        return None
    location = None
    parts: list[Participant] = []
    for i, (off, n) in enumerate(names):
        if _LOC_PREP.search(sent[max(0, off - 8):off]) and location is None and i > 0:
            location = n
            ents[norm_name(n)].type = "LOCATION"
        else:
            parts.append(Participant(entity=n, role="subject" if i == 0 else "participant"))
    if title and norm_name(title) not in {norm_name(p.entity) for p in parts}:
        parts.insert(0, Participant(entity=title, role="topic"))
    ev = Event(event_id=event_key(chunk.chunk_id, f"S{start}", sent[:60]), title=sent[:120], description=sent[:400],
               time=dates[0][2] if dates else EventTime(), location=location, participants=parts[:8],
               chunk_ids=[chunk.chunk_id], doc_ids=[chunk.doc_id])
    out.events.append(ev)
    out.relations += [Relation(source=entity_key(p.entity), target=ev.event_id, type="PARTICIPATES_IN",
                               chunk_ids=[chunk.chunk_id]) for p in ev.participants]
    if location:
        out.relations.append(Relation(source=ev.event_id, target=entity_key(location), type="LOCATED_IN",
                                      chunk_ids=[chunk.chunk_id]))
    if prev_event is not None:
        out.relations += causal_relations(prev_event, ev, chunk.chunk_id)
    return ev

