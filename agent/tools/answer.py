"""`answer`: the policy's final answer, citing chunks the run has seen; in a long task, the answer to one item.

The answer text is the policy's own: nothing rewrites it. A citation of a chunk the run has not seen is
refused, naming the valid ids. Without citations, the seen chunks whose text holds the answer are cited
(the policy's text unchanged); an answer no seen chunk holds and no citation supports is refused —
except yes/no and "insufficient information", which no passage spells out. An answer to a question that
is a sentence (more than `SENTENCE_WORDS` words), that repeats the question's own words, that names
neither option of a question ending in two ("…: A or B?"), that only names what the question names
(itself, or once `resolve` filled a name in: the hop before the answer), that is a bare name where the
question asks for an event ("What supplier event led to …?", "Why did …?"), or an item's answer that
another item already has, is refused once with what a short answer is; given again, or at the run's last
step, it is recorded as it stands (the policy decides, the tool only states the contract).

After an answer naming only what the question names is refused, `answer` is not offered for one turn: a
1.5B model told so gives the same answer again at once, even when told which question to search; made to
take one more step (search, read, resolve) first, it answers from what that step found, or repeats.

After an answer naming neither option is refused, the next answer call's grammar admits the two options
alone: told them in the refusal, a 1.5B model gave its refused answer again word for word (2 of 2 runs).

After a sentence answer stating a cause and its effect is refused in a run that asked `timeline` for
causes, the retry's grammar admits the parts of that sentence its causal connective delimits which the
contract accepts (not the part that repeats the question): told to give the few words, a 1.5B model
wrote its sentence again in 3 of 6 causal questions ("The crack in the spillway wall caused Corrow Valley
Water to lower …"); the cause it names is its own words.

After a bare name is refused where the question asks for an event, the next answer call's grammar
admits that name followed by what happened ("Orvell Logistics" -> "Orvell Logistics went bankrupt"): told
to say what happened, a 1.5B model gave the same name again (2 of 2 causal questions).

After a sentence is refused, the next answer call must open with `quote` (the grammar lists it first and
requires it): a 1.5B model given the same schema writes the same sentence again word for word, whatever
the refusal says; given a field for the sentence first, it writes it there and then the few words ("The
membrane failure"). Elsewhere `quote` is optional: where the answer is an option of the question or a
computed date difference, a required quote made the model answer from the one sentence it quoted.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agent.focus import Passage, stem, words
from agent.plan import SubQuestion
from agent.state import RunState, Step
from agent.tools.context import ToolContext
from agent.tools.ids import adapt_ids, clean_citations
from agent.tools.registry import Pattern, Tool, ToolError, ToolResult
from agent.tools.resolve import resolved
from agent.tools.timeline import SHOWN
from agent.tools.told_events import NAME_JOINERS, Told, told_events
from eventrag.connectives import causal_links

__all__ = ["clean_citations", "make_answer", "supporting"]

UNCITED = {"yes", "no", "insufficient information", "unknown"}
SHOWN_IDS = 12
SENTENCE_WORDS = 12  # longer is a sentence about the answer, not the answer
RESTATES = 0.7  # share of the question's content words an answer that only repeats it holds
ASKED = "only what the question asks for, in a few words (a name, a date, a number, a short event)"
SHORT = f"give {ASKED}"
SENTENCE = "the answer is a sentence"
EVENT = "the question asks for an event"
_CONJUNCTS = re.compile(r",?\s+and\s+|;\s*")  # joins two causes inside one cause clause
_EVENT_Q = re.compile(r"^\s*(?:(?:what|which)\s+(?:[\w-]+\s+){0,2}events?\b|why\b)", re.IGNORECASE)  # asks for one
NAMED = "the answer only names what the question names"
_CHOICE = re.compile(r"\b(?:or|between|either)\b", re.IGNORECASE)  # an answer naming an option is one
_OPTIONS = re.compile(r"[:,]\s*([^:,?]+?)\s+or\s+([^:,?]+?)\s*\?\s*$")  # "Which cost more: A or B?"
OPTIONS = "the question asks to choose"


def _words(text: str) -> str:
    return " ".join(re.findall(r"\w+", text.lower()))


def supporting(run: RunState, answer: str) -> list[str]:
    """Seen chunks whose text contains the answer (word-normalised), best ranked first."""
    key = _words(answer)
    if not key or key in UNCITED:
        return []
    hits = [ev for ev in run.evidence.values() if key in _words(ev.text)]
    hits.sort(key=lambda ev: (ev.rank or 99, ev.step))
    return [ev.chunk_id for ev in hits[:3]]


def _valid_ids(run: RunState) -> str:
    ids = list(run.evidence)
    more = f" (+{len(ids) - SHOWN_IDS} more)" if len(ids) > SHOWN_IDS else ""
    return ", ".join(ids[:SHOWN_IDS]) + more if ids else "none yet: search first"


def checked_citations(run: RunState, text: str, citations: list[str] | None) -> list[str]:
    """The answer's citations, all seen by the run; ToolError when one is unseen or none supports it."""
    cites = clean_citations(citations or [])
    unseen = [c for c in cites if c not in run.evidence]
    if unseen:
        raise ToolError(
            f"citation {', '.join(unseen)} is not a chunk this run has seen; cite ids from the results: {_valid_ids(run)}"
        )
    if cites or _words(text) in UNCITED:
        return cites
    found = supporting(run, text)
    if not found:
        raise ToolError(
            f"the answer {text!r} cites no chunk and no seen chunk contains it; cite the chunks that support it: "
            f"{_valid_ids(run)}"
        )
    return found


def restates(question: str, answer: str) -> bool:
    """Whether `answer` only repeats `question`: every content word from it, and most of its content words."""
    q, a = {stem(w) for w in words(question)}, {stem(w) for w in words(answer)}
    return len(a) >= 3 and a <= q and len(a) >= RESTATES * len(q)


def _names_only(question: str, text: str) -> bool:
    said = set(words(text))
    return bool(said) and said <= set(words(question))


def echo_problem(run: RunState, question: str, text: str) -> str | None:
    """Why `text` names what `question` already names, not what it asks (None: it names something new).

    The words are compared as written (no stems: "Jong-suk" is not "Jong-chul"). The question's form with
    a resolved name filled in counts too: "Owen Pritchard" does not answer "Who succeeded Owen Pritchard?".
    A question offering options ("A or B", "between A and B") is answered by naming one of them.
    """
    if _CHOICE.search(question):
        return None
    if _names_only(question, text):
        return f"{NAMED} ({text!r}); it asks for something else about it: search or read for that, then answer"
    for data in resolved(run):
        hop = data["question_with_name"]
        if _names_only(hop, text):
            return (f"{NAMED} once resolved ({text!r} is {data.get('description')!r}); it asks: {hop} — "
                    "search that, then answer")
    return None


def name_problem(question: str, text: str) -> str | None:
    """Why `text` answers a question asking for an event ("What supplier event led to …", "Why did …")
    with a bare name ("Orvell Logistics": who, not what happened); None otherwise."""
    tokens = re.findall(r"[\w'&-]+", text)
    if not _EVENT_Q.search(question) or not tokens or _words(text) in UNCITED:
        return None
    if all(t[0].isupper() or t.lower() in NAME_JOINERS for t in tokens) and tokens[0][0].isupper():
        return f"{EVENT}: {text!r} is a name; say what happened, who did what, in a few words, and its citations"
    return None


def question_options(question: str) -> tuple[str, str] | None:
    """The two options a question ends in ("Which cost more: A or B?" -> (A, B)), None when it offers none."""
    found = _OPTIONS.search(question)
    if found is None:
        return None
    a, b = (" ".join(o.split()) for o in found.groups())
    return a, b


def options_problem(question: str, text: str) -> str | None:
    """Why `text` answers no option of a question that ends in two ("…: A or B?", "…, A or B?"): fewer than
    half its words are one option's ("Corrow Valley Water" names neither "the Fennick Water Board" nor
    "Sallow District Waterworks"); None: it names one, there are no options, or it abstains."""
    options = question_options(question)
    said = set(words(text))
    if options is None or not said or _words(text) in UNCITED:
        return None
    a, b = options
    if max(len(said & set(words(a))), len(said & set(words(b)))) * 2 >= len(said):
        return None
    return f"{OPTIONS}: {a!r} or {b!r}; answer with the one that fits, and its citations"


def shape_problem(question: str, text: str) -> str | None:
    """Why `text` is not a short answer to `question`, or None when it is one."""
    n = len(text.split())
    if n > SENTENCE_WORDS:
        return f"{SENTENCE} of {n} words; put that sentence in quote, and in answer {ASKED}, and its citations"
    if restates(question, text):
        return f"the answer repeats the question; {SHORT}, and its citations"
    return None


def repeated_item(run: RunState, sq: SubQuestion, text: str) -> str | None:
    """Why `text` is not item `sq`'s own answer: another item already has it word for word (a small model
    copies its previous answer call); None when it is new, or a yes/no that items share."""
    key = _words(text)
    other = next((s for s in run.plan.sub_questions if s.id != sq.id and s.answer and _words(s.answer) == key), None)
    if other is None or key in UNCITED:
        return None
    return (f"item {other.id} already has the answer {text!r}; item {sq.id} asks: {sq.text[:300]} "
            f"— give its own answer from the evidence found for it, and its citations")


def _problem(run: RunState, sq: SubQuestion | None, text: str) -> str | None:
    """What the answer contract refuses in `text` (a long request's findings are exempt: its requirements,
    "give an overview of …", are answered by findings, not a phrase)."""
    if run.plan.outline:
        return None
    question = sq.text if sq else run.question
    return (shape_problem(question, text) or options_problem(question, text) or echo_problem(run, question, text)
            or name_problem(question, text) or (repeated_item(run, sq, text) if sq else None))


def _refused(steps: list[Step], head: str) -> bool:
    """Whether an `answer` call of `steps` was refused with a message opening with `head`."""
    return any(m.name == "answer" and m.content.startswith(f"error: {head}") for st in steps for m in st.results)


def sentence_refused_last(run: RunState) -> bool:
    """Whether the run's last step is an answer call refused for being a sentence."""
    return _refused(run.steps[-1:], SENTENCE)


def refused_answer(run: RunState) -> str:
    """The answer text of the run's last call (the one a refusal answered), whitespace collapsed."""
    return " ".join(str(run.steps[-1].assistant.tool_calls[0].arguments.get("answer") or "").split())


def sentence_parts(run: RunState, sq: SubQuestion | None) -> list[str]:
    """After a sentence answer was refused in a run that asked the timeline for causes: the cause and the
    effect its causal connective delimits ("The crack in the spillway wall caused Corrow Valley Water to
    lower …" -> "The crack in the spillway wall"), those the answer contract accepts; [] otherwise. A part
    too long to be an answer is offered by its conjuncts as well ("a vote of no confidence in him and his
    dismissal of the orchestra's leader during a rehearsal": two causes, each a few words)."""
    if not sentence_refused_last(run) or not any(d.get("relation") == "causes" for st in run.steps for d in st.data):
        return []
    refused = refused_answer(run)
    links = causal_links(refused) if refused else []
    whole = [p.strip(" ,;.") for link in links for p in (link.cause, link.effect)]
    pieces = [c.strip(" ,;.") for p in whole if len(p.split()) > SENTENCE_WORDS for c in _CONJUNCTS.split(p)]
    return [p for p in dict.fromkeys(whole + pieces) if p and _problem(run, sq, p) is None]


def event_pattern(run: RunState) -> Pattern | None:
    """After a bare name was refused for a question asking for an event: the refused name told with what
    happened, after it ("Orvell Logistics went bankrupt", "Ardent Filtration, their maker, had gone into
    administration") or before it ("Kingsgate was taken over by Castellan Bank"); None otherwise."""
    if not _refused(run.steps[-1:], EVENT):
        return None
    refused = refused_answer(run)
    if not refused or any(c in refused for c in '"\\'):  # the pattern's characters go into a JSON string as written
        return None
    literal = re.sub(r"([.^$*+?()[\]{}|])", r"\\\1", refused)  # llama.cpp's patterns know no "\ "
    return Pattern(f"^({literal},? [a-z][a-zA-Z0-9 ,'-]+|[A-Za-z0-9][a-zA-Z0-9 ,'-]* {literal}[a-zA-Z0-9 ,'-]*)$")


def told_of(run: RunState, name: str) -> list[str]:
    """What the causes a timeline listed tell happened to or by `name` (without a timeline, the seen
    evidence), in the timeline's order. A kind's timeline lists that kind's causes alone (the first
    `of_kind` of its ranking): the others, only counted there, are never offered."""
    causes = [e for st in run.steps for d in st.data if d.get("relation") == "causes"
              for e in d.get("events", [])[: min(SHOWN, d.get("of_kind") or SHOWN)]]  # fmt: skip
    passages: Sequence[Passage] = [Told(str(e.get("text") or "")) for e in causes] if causes else list(run.evidence.values())
    return told_events(name, passages)


def name_events(run: RunState) -> list[str]:
    """After a bare name was refused for a question asking for an event: the events told of it
    (`told_of`), which the answer grammar offers; [] otherwise."""
    return told_of(run, refused_answer(run)) if _refused(run.steps[-1:], EVENT) else []


def options_refused_last(run: RunState) -> bool:
    """Whether the run's last step is an answer call refused for naming neither option of the question."""
    return _refused(run.steps[-1:], OPTIONS)


def echo_refused(steps: list[Step]) -> bool:
    """Whether an answer call of `steps` was refused for naming only what the question names."""
    return _refused(steps, NAMED)


def echo_refused_last(run: RunState) -> bool:
    """Whether the run's last step is an answer call refused for naming only what the question names."""
    return echo_refused(run.steps[-1:])


def _refused_before(run: RunState, problem: str) -> bool:
    """Whether an earlier `answer` call was refused for the same problem (the second try is recorded)."""
    if problem.startswith(SENTENCE):  # a sentence again, whatever its length
        return _refused(run.steps, SENTENCE)
    named = problem.startswith(NAMED)  # the same kind of echo, whatever it names: up to its "("
    return _refused(run.steps, problem[: problem.index("(") + 1] if named else problem.split(";")[0])


def _item(run: RunState, item: int | None) -> SubQuestion | None:
    """The long task's item this answer is for (default: the first unanswered); None for a single question."""
    items = run.plan.sub_questions
    if not items:
        return None
    if item is None:
        return next(iter(run.plan.open()), items[-1])
    sq = run.plan.get(item)
    if sq is None:
        raise ToolError(f"item={item} is not an item of this task; items: {', '.join(str(s.id) for s in items)}")
    return sq


def make_answer(ctx: ToolContext) -> Tool:
    def answer(answer: str, citations: list[str] | None = None, item: int | None = None, quote: str = "") -> ToolResult:
        """Give the answer: a few words (a name, date, number, yes/no) and the chunk ids supporting it.

        Args:
            answer: the answer only, a few words
            citations: chunk ids from the results that support the answer
            item: in a numbered task, the number of the item this answers
            quote: the sentence from the results that holds the answer
        """
        run = ctx.run
        text = " ".join(answer.split())
        if not text:
            raise ToolError("answer is empty; give the answer in a few words")
        sq = _item(run, item)
        problem = None if text in name_events(run) else _problem(run, sq, text)  # copied from the evidence
        told = told_of(run, text) if problem and problem.startswith(EVENT) else []
        if told:
            problem = f"{problem}; the causes tell of it: " + "; ".join(f'"{e}"' for e in told)
        if problem and not ctx.last_turn and not _refused_before(run, problem):
            raise ToolError(problem)
        cites = checked_citations(run, text, citations)
        data = {"answer": text, "citations": cites, "item": sq.id if sq else None, "quote": " ".join(quote.split())}
        if sq is None:
            return ToolResult(content=f"Answer recorded: {text}", final=True, data=data)
        sq.answer, sq.citations = text, cites
        left = [s.id for s in run.plan.open()]
        rest = f"; items still open: {', '.join(map(str, left))}" if left else "; every item is answered"
        return ToolResult(content=f"Answer to item {sq.id} recorded: {text}{rest}", final=not left, data=data)

    def choices() -> dict[str, list[object] | Pattern]:
        run = ctx.run
        now: dict[str, list[object] | Pattern] = {"citations": list(run.evidence), "item": [s.id for s in run.plan.sub_questions]}
        sq = _item(run, None)  # the item an answer call without `item` is checked against
        options = question_options(sq.text if sq else run.question) if options_refused_last(run) else None
        if options:  # told the two options, a 1.5B gave its refused answer again: the grammar offers them alone
            now["answer"] = list(options)
        parts = sentence_parts(run, sq)
        if parts:
            now["answer"] = list(parts)
        # told to say what happened, a 1.5B restated the name with what it recalled ("X, the supplier of
        # …"): the grammar offers what the evidence tells of it, and where no clause names it, extends it
        told: list[object] = list(name_events(run))
        event = told or event_pattern(run)
        if event:
            now["answer"] = event
        return now

    def required() -> list[str]:
        return ["quote"] if sentence_refused_last(ctx.run) else []

    def ready() -> bool:
        return not echo_refused_last(ctx.run)

    return Tool.from_function(answer, choices=choices, adapt=adapt_ids("citations"), enforce_choices=False,
                              required=required, ready=ready)
