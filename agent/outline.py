"""Outlines: a long research request ("write a report that covers …") planned as its own requirements.

In long mode, a request written as a structure — numbered or lettered items, bullets, "Part One:",
"Table 1:", or paragraphs ("First, … Second, … Finally, …") after an opening paragraph — is planned as
one item per requirement, in the order asked: the user's own words (no model call: a small model asked
to outline a long request drops whole parts of it). A list that opens under an item ending
with ":" is read with that item: its long entries become requirements of their own (headed by the
item's bold title, if it has one), its short ones ("Transformers", "CNN") are one requirement with the
item. Lines about the report's form ("Please ensure the report has a clear structure…") and the
benchmark's blocked-source rule are not requirements.

The requirements are a long task's items, as a briefing's questions are (`agent.briefing`): each
answered in the same loop by `answer(item=n)` with a finding of a sentence or two, one report section
each. A request that lists questions stays a question briefing; one without structure is a single
question.
"""

from __future__ import annotations

import re

from pydantic import BaseModel

from agent.plan import Plan, SubQuestion

MAX_REQUIREMENTS = 12
MAX_TEXT = 220  # characters of a requirement kept as its sub-question (its search and its heading)
SHORT_ENTRY = 5  # words: a list entry this short is part of its item, not a requirement of its own

_MARKER = re.compile(
    r"^(?:(?P<num>\d{1,2}[.)])|(?P<alpha>[A-Za-z][.)])|(?P<bullet>[*•\-–])|"
    r"(?P<label>(?:Part|Section|Table|Step|Chapter)\s+[\w-]+\s*[:.)]))\s+(?P<rest>\S.*)$"
)
_RULE = re.compile(r"\*\*important\*\*|you are not allowed to view|rule of highest priority", re.I)
_FORM = re.compile(
    r"^(?:please\s+)?(?:ensure|make sure|note that)\b|clear structure|distinct headings|"
    r"^(?:please\s+)?(?:write|format) (?:it|the report) in\b",
    re.I,
)
_POLITE = re.compile(
    r"^(?:(?:hello|hi|first(?:ly)?|second(?:ly)?|third(?:ly)?|then|next|finally|lastly|similarly|"
    r"additionally|in addition|also)\b[,:]?\s*|please\s+|kindly\s+|(?:i would like|i want|i need|i hope)"
    r"\s+(?:you\s+)?(?:to\s+)?(?:can\s+)?|you (?:need|should|must) (?:to\s+)?|(?:help me|could you|can you)\s+"
    r"|refers to\s+)",
    re.I,
)
_TITLE = re.compile(r"^\*\*(?P<title>[^*]{2,120})\*\*\s*[:.\-–]?\s*(?P<rest>.*)$")
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z'\"(])")


class Requirement(BaseModel):
    """An item that opens a list (it ends with \":\")."""

    text: str  # the cleaned requirement: what is searched and what heads its section
    title: str = ""  # its bold title, if it had one (it heads the long entries of its list)
    kind: str = "plain"  # its marker: num, alpha, bullet, label or plain (entries have another)


def _kind(line: str) -> tuple[str, str]:
    m = _MARKER.match(line)
    if m is None:
        return "plain", line
    kind = next(k for k in ("num", "alpha", "bullet", "label") if m.group(k))
    return kind, m.group("rest")


def _strip_polite(text: str) -> str:
    for _ in range(4):  # "Finally, please …", "Hello, I would like you to …"
        new = _POLITE.sub("", text, count=1).lstrip(" ,:")
        if new == text:
            break
        text = new
    return text[:1].upper() + text[1:]


def clean(line: str) -> tuple[str, str]:
    """(title, text) of one requirement line: markers, bold and politeness dropped, the title kept in
    front ("Regulatory Framework: List the main …"), cut to its first sentences (at most `MAX_TEXT`)."""
    _, rest = _kind(line.strip())
    title = ""
    m = _TITLE.match(rest)
    if m:
        title, rest = " ".join(m.group("title").split()).strip(" :"), m.group("rest")
    body = _strip_polite(re.sub(r",\s+please\s+", ", ", rest.replace("**", "")).strip())
    sentences = _SENTENCE_END.split(body)
    kept = sentences[0] if sentences else ""
    for s in sentences[1:]:
        if len(kept) >= 60:
            break
        kept = f"{kept} {s}"
    return title, _cut(f"{title}: {kept}" if title and kept else (title or kept))


def _cut(text: str) -> str:
    text = text.strip()
    if len(text) <= MAX_TEXT:
        return text
    return text[: MAX_TEXT - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"


def _body(question: str) -> tuple[str, list[str]]:
    """(the opening paragraph, the lines after it), the blocked-source rule and blank lines dropped."""
    lines = [" ".join(x.split()) for x in question.splitlines()]
    lines = [x for x in lines if x]
    cut = next((i for i, x in enumerate(lines) if _RULE.search(x)), len(lines))
    lines = lines[:cut]
    if lines and _kind(lines[0])[0] == "plain":
        return lines[0], lines[1:]
    return "", lines


def requirements(question: str) -> list[str]:
    """The requirements of a structured request, in order; empty when it has fewer than two."""
    _, lines = _body(question)
    out: list[str] = []
    parent: Requirement | None = None
    short: list[str] = []  # the open list's short entries
    entries = 0  # the open list's entries, short or long
    slot = 0  # where the open list began in `out`

    def close() -> None:
        nonlocal parent, short, entries
        if parent is not None and short:  # one requirement, where the list began: the item and its short entries
            out.insert(slot, _cut(f"{parent.title or parent.text.rstrip(':')}: {'; '.join(short)}"))
        elif parent is not None and not entries:  # "…:" with nothing after it
            out.append(parent.text.rstrip(":"))
        parent, short, entries = None, [], 0

    for line in lines:
        kind, _ = _kind(line)
        if kind == "plain" and _FORM.search(line):
            continue
        if parent is not None and kind not in ("plain", parent.kind):  # an entry of the open list
            entry_title, text = clean(line)
            entries += 1
            if len(text.split()) < SHORT_ENTRY:
                short.append(text)
            elif text:
                out.append(_cut(f"{parent.title} — {text}") if parent.title and entry_title != parent.title else text)
            continue
        close()
        if kind == "plain" and line.endswith(":"):  # a lead-in ("… the following sections:")
            continue
        req_title, text = clean(line)
        if line.endswith(":"):
            parent, slot = Requirement(text=text, title=req_title, kind=kind), len(out)  # its entries stand for it
        elif text:
            out.append(text)
    close()
    out = [x for i, x in enumerate(out) if x and x not in out[:i]]
    return out if len(out) >= 2 else []


def title(question: str) -> str:
    """The report's heading: the opening paragraph's first sentence, politeness dropped."""
    intro, _ = _body(question)
    if not intro:
        return "Research report"
    first = _SENTENCE_END.split(_strip_polite(intro.replace("**", "")))[0].strip()
    return first if len(first) <= 160 else first[:159].rsplit(" ", 1)[0] + "…"


def outline_plan(question: str) -> Plan | None:
    """The plan of a structured long request (its first `MAX_REQUIREMENTS` requirements), else None."""
    reqs = requirements(question)
    if not reqs:
        return None
    subs = [SubQuestion(id=i, text=t) for i, t in enumerate(reqs[:MAX_REQUIREMENTS], 1)]
    return Plan(sub_questions=subs, briefing=True, outline=True, beyond=reqs[MAX_REQUIREMENTS:])
