"""Find, in a Markdown report, the part that answers each numbered sub-question of a composite request.

The request asks for "## <n>. <question>" sections opening with "Answer: …". Reports deviate: numbered
list items instead of headings, sections reordered or renumbered, some skipped, the question restated
before the answer, bold markers, a Sources list at the end. The rules, in order:

1. The report ends where a Sources / References / Citations / Run heading starts (that tail is parsed
   for the numbered source entries only).
2. Segments start at numbered headings ("## 2.", "### Question 2:", "## Q2 –"); only when there are
   none, at numbered lines ("2.", "**2.**", "2)", "Q2:") at the start of a line. An unnumbered heading
   ends a numbered line's segment, and a numbered heading's when it is of the same or a higher level
   ("## Evidence seen" after "### 2. …").
3. A segment goes to the sub-question whose text its heading restates (token F1 >= 0.6), else to the
   sub-question with its number; segments that fit neither are ignored.
4. Its answer is the text after the first "Answer:" in it; without one, the heading's own text when it
   does not restate the question, else the first body line. Citation markers, emphasis and a trailing
   explanation sentence are stripped.
5. When several segments claim one sub-question, the first with an explicit "Answer:" wins, else the
   first with any answer text.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from eval.multihop.metrics import f1_score

HEADING_MARKS = re.compile(r"^\s{0,3}(#{1,6})(?:\s|$)")
TAIL_HEADING = re.compile(r"^\s{0,3}#{1,6}\s*(sources|references|citations|bibliography|run)\b", re.I)
NUMBERED_HEADING = re.compile(
    r"^\s{0,3}#{1,6}\s*[*_]*\s*(?:question|q|sub-?question|part)?\s*(\d{1,2})(?!\d)\s*[*_]*\s*[.):\-–—]?\s*[*_]*\s*(.*)$",
    re.I,
)
NUMBERED_LINE = re.compile(
    r"^\s{0,3}[*_]*\s*(?:question\s*|q)?(\d{1,2})(?!\d)\s*[*_]*\s*[.):]\s*[*_]*\s*(.*)$",
    re.I,
)
ANSWER_LABEL = re.compile(
    r"(?:^|[\s*_>\-|(])(?:short\s+|final\s+)?answer\s*[*_]*\s*[:：]\s*[*_]*\s*(.*)$", re.I
)
MARKER = re.compile(r"\[(?:c:[^\]\s]+|\d{1,3}(?:\s*[,;]\s*\d{1,3})*)\]")
SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]]{2})[.;]\s+(?=[A-Z(])")
RESTATES = 0.6


@dataclass
class Segment:
    number: int
    heading: str  # text after the number on the segment's first line
    lines: list[str] = field(default_factory=list)  # the lines after the first
    is_heading: bool = True
    level: int = 0  # the heading's number of "#" (0: a numbered line)

    @property
    def text(self) -> str:
        return "\n".join([self.heading, *self.lines])


@dataclass
class Located:
    """What the report says for one sub-question."""

    found: bool = False
    answer: str = ""
    text: str = ""  # the whole segment (citations are read from it)
    explicit: bool = False  # the answer came after an "Answer:" label


def split_tail(report: str) -> tuple[list[str], list[str]]:
    """(body lines, tail lines): the tail starts at the first Sources/References/Run heading."""
    lines = report.splitlines()
    for i, line in enumerate(lines):
        if TAIL_HEADING.match(line):
            return lines[:i], lines[i:]
    return lines, []


def restates(text: str, question: str) -> bool:
    return f1_score(text, [question]) >= RESTATES


def heading_level(line: str) -> int:
    """The Markdown heading level of `line` (number of leading "#"), 0 when it is no heading."""
    m = HEADING_MARKS.match(line)
    return len(m.group(1)) if m else 0


def _ends(segment: Segment, line: str) -> bool:
    """An unnumbered heading ends a numbered-line segment, and a heading segment when it is of the
    same or a higher level ("## Evidence" after "### 2. …" is no longer item 2)."""
    level = heading_level(line)
    return bool(level) and (not segment.is_heading or level <= segment.level)


def segments(body: list[str]) -> list[Segment]:
    """Numbered segments of the body: headings when there are any, else numbered lines."""
    for pattern, is_heading in ((NUMBERED_HEADING, True), (NUMBERED_LINE, False)):
        out: list[Segment] = []
        for line in body:
            m = pattern.match(line)
            if m and (is_heading or not heading_level(line)):
                out.append(
                    Segment(
                        int(m.group(1)), m.group(2).strip(), is_heading=is_heading, level=heading_level(line)
                    )
                )
            elif out and _ends(out[-1], line):
                out.append(Segment(0, "", is_heading=False))
            elif out:
                out[-1].lines.append(line)
        out = [s for s in out if s.number > 0]
        if out:
            return out
    return []


def clean_answer(text: str) -> str:
    text = MARKER.sub(" ", text)
    text = text.replace("**", "").replace("__", "").strip().strip("*_`>-–— ").strip()
    text = SENTENCE_END.split(text, maxsplit=1)[0]
    return " ".join(text.split()).rstrip(".").strip()[:300]


def answer_of(seg: Segment, question: str) -> Located:
    for line in [seg.heading, *seg.lines]:
        m = ANSWER_LABEL.search(line)
        if m and clean_answer(m.group(1)):
            return Located(True, clean_answer(m.group(1)), seg.text, explicit=True)
    candidates = [] if restates(seg.heading, question) else [seg.heading]
    candidates += [ln for ln in seg.lines if not ln.lstrip().startswith("#")]
    for line in candidates:
        answer = clean_answer(line)
        if answer:
            return Located(True, answer, seg.text)
    return Located(True, "", seg.text)


def _assign(seg: Segment, questions: list[str]) -> int | None:
    sims = [f1_score(seg.heading, [q]) for q in questions]
    best = max(range(len(questions)), key=sims.__getitem__)
    if sims[best] >= RESTATES:
        return best + 1
    return seg.number if 1 <= seg.number <= len(questions) else None


def locate_answers(report: str, questions: list[str]) -> dict[int, Located]:
    """For each sub-question number 1..k, what the report states for it (found=False when nothing)."""
    body, _ = split_tail(report)
    claims: dict[int, list[Located]] = {n: [] for n in range(1, len(questions) + 1)}
    for seg in segments(body) if questions else []:
        n = _assign(seg, questions)
        if n is not None:
            claims[n].append(answer_of(seg, questions[n - 1]))
    out: dict[int, Located] = {}
    for n, found in claims.items():
        ranked = [c for c in found if c.explicit] + [c for c in found if c.answer and not c.explicit]
        out[n] = ranked[0] if ranked else (found[0] if found else Located())
    return out
