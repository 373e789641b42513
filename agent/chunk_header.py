"""A chunk's header lines (its title again, "Key: value" metadata such as "Date: 2013-07-30", short
unpunctuated headings at the top) apart from its body: the statements.

The tools show the header as labelled metadata, not as the first words of the text: a small model asked
"on what date was the notice lifted?" otherwise answers the date the document was published, the first
date it sees. The report quotes only the body.
"""

from __future__ import annotations

import re

__all__ = ["header_note", "norm", "shown", "split_header"]

_HEADER = re.compile(r"^(?:#+\s|\W*[A-Z][\w ]{0,24}:\s*\S)")  # "# Title", "Date: 2015-01-09", "Source: …"
_FIELD = re.compile(r"^\W*([A-Z][\w ]{0,24}):\s*(\S.*)$")
_LABELS = {"date": "published"}  # what a bare "Date:" of a document header means


def norm(text: str) -> str:
    """Lower-case words joined by single spaces (text compared whatever its punctuation)."""
    return " ".join(re.findall(r"\w+", text.lower()))


def split_header(title: str, text: str, *, headings: bool = True) -> tuple[list[tuple[str, str]], str]:
    """The header's "Key: value" fields and the body (whitespace collapsed) of a chunk's `text`; with
    `headings=False` only the title line and the fields leave the body (a tool shows every other line)."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    fields: list[tuple[str, str]] = []
    key = norm(title)
    while lines:
        first = lines[0]
        heading = headings and len(first.split()) <= 12 and not first.rstrip().endswith((".", "!", "?", '"'))
        field = _FIELD.match(first) if len(first) < 120 and not first.startswith("#") else None
        if (key and norm(first) == key) or field or (headings and _HEADER.match(first) and len(first) < 120) \
                or heading and len(lines) > 1:
            if field:
                fields.append((field.group(1).strip(), field.group(2).strip()))
            lines.pop(0)
            continue
        break
    return fields, " ".join(" ".join(lines).split())


def header_note(fields: list[tuple[str, str]]) -> str:
    """The fields as a note after a title: ` (published 2013-07-30)`; "" without fields."""
    said = [f"{_LABELS.get(k.lower(), k.lower())} {v}" for k, v in fields]
    return f" ({'; '.join(said)})" if said else ""


def shown(title: str, text: str) -> tuple[str, str]:
    """What a tool shows of a chunk: the note after its title (`header_note`) and its text without the
    title line and the fields (every other line kept; the whole text when nothing else is left)."""
    fields, body = split_header(title, text, headings=False)
    return header_note(fields), body or text
