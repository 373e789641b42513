"""Query decomposition into event elements, and the reflection step, with an LLM or by rules.

With a chat model: ONE structured call for decomposition and one per reflection round (JSON schema).
Without one (or when the call fails): participants from capitalised spans and the entity lexicon,
time constraints from dates next to before/after/in, the relation type from cue words, and a
reflection rule that turns the newest evidence into follow-up queries.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from eventfold.llm.types import ChatModel, LLMError, Message
from eventfold.text_safety import mask_secrets
from eventrag.dates import find_dates, normalise_time
from eventrag.index.rules_extract import find_entities
from eventrag.prompts import (
    DECOMPOSE_SCHEMA,
    DECOMPOSE_SYSTEM,
    REFLECT_SCHEMA,
    REFLECT_SYSTEM,
    question_user,
    reflect_user,
)
from eventrag.schema import RELATION_TYPES


class Decomposition(BaseModel):
    sub_queries: list[str] = Field(default_factory=list)
    entities: list[str] = Field(default_factory=list)
    event: str = ""
    time_from: str | None = None  # ISO bounds for the time filter
    time_to: str | None = None
    relation: str | None = None
    by_llm: bool = False


class Reflection(BaseModel):
    sufficient: bool
    missing: str = ""
    sub_queries: list[str] = Field(default_factory=list)
    by_llm: bool = False


_REL_CUES: list[tuple[str, re.Pattern[str]]] = [
    ("CAUSES", re.compile(r"\b(cause[sd]?|because|why|led to|lead to|result(?:ed)? in|due to|reason|consequence)\b", re.I)),
    ("ENABLES", re.compile(r"\b(enabled?|allowed?|made possible)\b", re.I)),
    ("BEFORE", re.compile(r"\b(before|prior to|earlier|first|preced\w*)\b", re.I)),
    ("AFTER", re.compile(r"\b(after|following|later|since|subsequent\w*)\b", re.I)),
    ("LOCATED_IN", re.compile(r"\b(where|located|place of)\b", re.I)),
]


def rule_decompose(question: str) -> Decomposition:
    ents = [n for _, n in find_entities(question)]
    relation = next((rel for rel, rx in _REL_CUES if rx.search(question)), None)
    time_from = time_to = None
    for start, _end, t in find_dates(question):
        before = question[max(0, start - 16):start].lower()
        if re.search(r"\b(after|since|from)\s*$", before):
            time_from = t.start
        elif re.search(r"\b(before|until|by)\s*$", before):
            time_to = t.end
        else:
            time_from, time_to = t.start, t.end
    return Decomposition(sub_queries=[question], entities=ents, relation=relation, time_from=time_from,
                         time_to=time_to)


def _llm_json(chat_model: ChatModel, system: str, user: str, schema: dict, max_tokens: int,
              errors: list[str] | None = None) -> dict | None:
    """The parsed JSON reply, or None; a failed call (server down, ...) is also appended to `errors`."""
    try:
        resp = chat_model.chat([Message(role="system", content=system), Message(role="user", content=user)],
                               json_schema=schema, temperature=0.0, max_tokens=max_tokens)
    except LLMError as exc:
        if errors is not None:
            errors.append(mask_secrets(f"{type(exc).__name__}: {exc}")[:300])
        return None
    if isinstance(resp.parsed, dict):
        return resp.parsed
    from eventrag.index.extract import MalformedOutput, lenient_json

    try:
        obj = lenient_json(resp.text)
    except MalformedOutput:
        return None
    return obj if isinstance(obj, dict) else None


def llm_decompose(chat_model: ChatModel, question: str, errors: list[str] | None = None) -> Decomposition:
    """One structured call; falls back to the rules (``by_llm`` False) when the output is unusable or
    the call failed (the failure appended to `errors`)."""
    base = rule_decompose(question)
    obj = _llm_json(chat_model, DECOMPOSE_SYSTEM, question_user(question), DECOMPOSE_SCHEMA, 256, errors)
    if obj is None:
        return base
    subs = [q.strip() for q in obj.get("sub_queries") or [] if isinstance(q, str) and q.strip()][:3]
    ents = [e.strip() for e in obj.get("entities") or [] if isinstance(e, str) and e.strip()]
    rel = obj.get("relation") if obj.get("relation") in RELATION_TYPES else base.relation
    t_from = normalise_time(obj.get("time_after") or "").start if isinstance(obj.get("time_after"), str) else None
    t_to_t = normalise_time(obj.get("time_before") or "") if isinstance(obj.get("time_before"), str) else None
    return Decomposition(
        sub_queries=list(dict.fromkeys([question, *subs])), entities=list(dict.fromkeys(ents + base.entities)),
        event=str(obj.get("event") or "")[:200], relation=rel,
        time_from=t_from or base.time_from, time_to=(t_to_t.end if t_to_t else None) or base.time_to, by_llm=True)


def llm_reflect(chat_model: ChatModel, question: str, passages: list[tuple[str, str]], asked: list[str],
                errors: list[str] | None = None) -> Reflection | None:
    obj = _llm_json(chat_model, REFLECT_SYSTEM, reflect_user(question, passages, asked), REFLECT_SCHEMA, 160, errors)
    if obj is None:
        return None
    subs = [q.strip() for q in obj.get("sub_queries") or [] if isinstance(q, str) and q.strip()]
    return Reflection(sufficient=bool(obj.get("sufficient")), missing=str(obj.get("missing") or "")[:300],
                      sub_queries=[q for q in subs if q not in asked][:2], by_llm=True)


def _bridge_sentence(question: str, text: str, relation: str | None) -> str:
    """The sentence of a passage that links onward: one stating the asked relation ("because ..."),
    else the one sharing most words with the question."""
    sentences = [x.strip() for x in re.split(r"(?<=[.!?])\s+", text.strip()) if len(x.strip()) > 20]
    if not sentences:
        return ""
    cue = next((rx for rel, rx in _REL_CUES if rel == relation), None)
    if cue is not None:
        hits = [x for x in sentences if cue.search(x)]
        if hits:
            return hits[0][:300]
    q = set(re.findall(r"\w{3,}", question.lower()))
    return max(sentences, key=lambda x: len(q & set(re.findall(r"\w{3,}", x.lower()))))[:300]


def rule_reflect(question: str, new_top: list[tuple[str, str]], asked: list[str], converged: bool,
                 relation: str | None = None) -> Reflection:
    """Sufficient when the last round changed nothing in the top results. Otherwise follow the newest
    evidence: for each new top passage, its bridging sentence (the one stating the asked relation, or
    the one closest to the question) becomes a sub-query, so the next hop is searched on its own terms."""
    if converged or not new_top:
        return Reflection(sufficient=True)
    subs = []
    for title, text in new_top[:2]:
        sentence = _bridge_sentence(question, text, relation)
        q = f"{title}: {sentence}" if title and title.lower() not in sentence.lower() else sentence
        if q and q not in asked and q not in subs:
            subs.append(q)
    return Reflection(sufficient=not subs, missing="" if subs else "nothing new to follow", sub_queries=subs)
