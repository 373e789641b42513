"""Cross-reference items of a composite task: a final question that needs a detail (a year, a number, a
name) which only an earlier item's gold supporting passage holds — the case the unfold tool exists for
(by the end of a long task that item's evidence is folded away).

Built deterministically from the set's passages: the referenced item is drawn, by a generator seeded
with the task id, from the first half of the task (the items most likely folded by the end); the detail
is the earliest one in its gold passages (the part a search result shows) that
- is not the item's answer nor in any question of the task (it was not asked before), nor the passage's title,
- appears in no gold passage of any other item of the task (only the referenced item's evidence holds it),
- is not written again in the words the question quotes around it.
The question quotes the words around the detail with the detail blanked, names the item it refers to
and the passage's title: "Question 3 drew on the passage "Arthur's Magazine", which says: "Arthur's
Magazine (___–1846) was an American literary periodical". Which year is blanked out (___)?"
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eval.multihop.metrics import normalize_answer
from eval.multihop.schema import Passage

CROSS_REFERENCE = "cross_reference"
BLANK = "___"
WINDOW_WORDS = 12  # words quoted on each side of the detail
YEAR = re.compile(r"(?<![\w.,])(1[5-9]\d\d|20\d\d)(?!\w|[.,]\d)")
MONTHS = "January|February|March|April|May|June|July|August|September|October|November|December"
# a date's day and month are no detail of their own (a model writes them in many forms); its year is
DATE = re.compile(rf"\d{{4}}-\d{{2}}-\d{{2}}|\d{{1,2}} (?:{MONTHS}) \d{{4}}|(?:{MONTHS}) \d{{1,2}}, \d{{4}}")
NUMBER = re.compile(r"(?<![\w.,])(\d{1,3}(?:,\d{3})+|\d+\.\d+|\d{2,})(?!\w|[.,]\d)")
# capitalised words on one line, not the tail of a hyphenated word ("HT-Core"), joined by spaces or a particle
NAME = re.compile(
    r"(?<![\w'-])([A-Z][a-z]+(?:[ \t]+(?:(?:of|de|von|van|der|la|du)[ \t]+)?[A-Z][a-z]+){1,3})(?![\w'-])"
)
NOT_NAME_START = frozenset(
    "the a an in on at of for by from with and but as after before during this that these those it its he she "
    "they his her their when while since".split()
)
KIND_WORDS = {"year": "year", "number": "number", "name": "name"}


@dataclass(frozen=True)
class Detail:
    kind: str  # year | number | name
    text: str
    start: int  # character offset in the passage


def details(text: str) -> list[Detail]:
    """Years, numbers and multi-word names of `text`, in order of position (a year is not also a number,
    nor is a date's day or month)."""
    found = [Detail("year", m.group(1), m.start(1)) for m in YEAR.finditer(text)]
    taken = {d.start for d in found} | {i for m in DATE.finditer(text) for i in range(m.start(), m.end())}
    found += [
        Detail("number", m.group(1), m.start(1)) for m in NUMBER.finditer(text) if m.start(1) not in taken
    ]
    for m in NAME.finditer(text):
        words = m.group(1).split()
        if words[0].lower() in NOT_NAME_START:
            words = words[1:]
        if len(words) >= 2:
            name = " ".join(words)
            found.append(Detail("name", name, m.start(1) + m.group(1).index(words[0])))
    return sorted(found, key=lambda d: d.start)


def _contains(hay: str, needle: str) -> bool:
    """`needle` written in `hay`: as words after normalising, or as it stands between non-word characters
    (normalising joins "2014-02-17" into one word, which still holds the year 2014)."""
    n = normalize_answer(needle)
    if n and f" {n} " in f" {normalize_answer(hay)} ":
        return True
    return bool(needle) and re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", hay, re.I) is not None


def usable(
    detail: Detail, passage: Passage, asked: Sequence[str], answers: Sequence[str], others: Sequence[str]
) -> bool:
    """The detail was not asked before (not an answer, not in a question, not the title) and no other
    item's evidence holds it."""
    if any(_contains(a, detail.text) or _contains(detail.text, a) for a in answers):
        return False
    if _contains(passage.title, detail.text) or any(_contains(q, detail.text) for q in asked):
        return False
    return not any(_contains(text, detail.text) for text in others)


def quote(text: str, detail: Detail) -> str:
    """The words around the detail as written, the detail blanked (one line, whitespace collapsed)."""
    end = detail.start + len(detail.text)
    before = [m.start() for m in re.finditer(r"\S+", text[: detail.start])][-WINDOW_WORDS:]
    after = [m.end() for m in re.finditer(r"\S+", text[end:])][:WINDOW_WORDS]
    left = before[0] if before else detail.start
    right = end + after[-1] if after else end
    return " ".join(html.unescape(f"{text[left : detail.start]}{BLANK}{text[end:right]}").split()).replace(
        '"', "'"
    )


def question_for(n: int, passage: Passage, detail: Detail) -> str:
    title = " ".join(html.unescape(passage.title).split()).replace('"', "'")
    return (
        f'Question {n} drew on the passage "{title}", which says: "{quote(passage.text, detail)}". '
        f"Which {KIND_WORDS[detail.kind]} is blanked out ({BLANK})?"
    )


REFERS = re.compile(r'^Question (\d+) drew on the passage "')  # the opening `question_for` writes


def referred_item(question: str) -> int | None:
    """The item a cross-reference question (`question_for`) refers to; None for any other question."""
    m = REFERS.match(question.strip())
    return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Item:
    """What the builder needs of one task item: its position, question, answers, gold passage ids."""

    n: int
    question: str
    answers: Sequence[str]
    passage_ids: Sequence[str]


@dataclass(frozen=True)
class CrossRef:
    refers_to: int
    question: str
    answer: str
    kind: str
    passage_id: str
    title: str


def _find(item: Item, items: Sequence[Item], passages: Mapping[str, Passage]) -> CrossRef | None:
    asked = [i.question for i in items]
    others = [passages[p].text for i in items if i.n != item.n for p in i.passage_ids if p in passages]
    for pid in item.passage_ids:
        passage = passages.get(pid)
        if passage is None:
            continue
        for detail in details(passage.text):
            if usable(detail, passage, asked, item.answers, others) and not _contains(
                quote(passage.text, detail), detail.text
            ):
                question = question_for(item.n, passage, detail)
                return CrossRef(item.n, question, detail.text, detail.kind, pid, passage.title)
    return None


def cross_refs(
    task_id: str, items: Sequence[Item], passages: Mapping[str, Passage], count: int
) -> list[CrossRef]:
    """Up to `count` cross-reference items for the task, each on a different earlier item, deterministic
    in (task id, items, passages). Fewer when the first half's items hold no usable detail."""
    if count < 1 or not items:
        return []
    early = list(items[: max(1, (len(items) + 1) // 2)])
    random.Random(f"{task_id}:cross-reference").shuffle(early)
    out: list[CrossRef] = []
    for item in early:
        ref = _find(item, items, passages)
        if ref is not None:
            out.append(ref)
            if len(out) == count:
                break
    return out
