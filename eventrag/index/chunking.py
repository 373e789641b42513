"""Token-window chunking with overlap that respects sentence boundaries; ids from content hashes.

Tokens are counted with a cheap word/punctuation tokenizer (close to sub-word counts for English
prose divided by ~1.3); what matters is that windows are bounded and deterministic.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass

from eventrag.schema import Chunk, Document

_TOKEN_RE = re.compile(r"\w+|[^\w\s]", re.UNICODE)
# A sentence ends at . ! ? (optionally followed by quotes/brackets) before whitespace, or at a blank line.
_SENT_END_RE = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9\u00C0-\u024F])|\n\s*\n")
_ABBREV = {"mr", "mrs", "ms", "dr", "st", "jr", "sr", "prof", "inc", "ltd", "co", "vs", "no", "gen", "col", "lt", "e.g", "i.e"}


@dataclass(frozen=True)
class ChunkingConfig:
    max_tokens: int = 200
    overlap_tokens: int = 40

    def __post_init__(self) -> None:
        if self.max_tokens < 8:
            raise ValueError("chunk max_tokens must be >= 8")
        if not 0 <= self.overlap_tokens < self.max_tokens:
            raise ValueError("chunk overlap_tokens must be in [0, max_tokens)")


def count_tokens(text: str) -> int:
    return len(_TOKEN_RE.findall(text))


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of sentences (whitespace between sentences excluded)."""
    spans: list[tuple[int, int]] = []
    start = 0
    for m in _SENT_END_RE.finditer(text):
        end = m.start()
        # the word before the stop, from a short window: a regex anchored at the end of the sentence
        # would scan a long unbroken token once per starting position
        tail = text[max(start, end - 40):end].split()
        if tail and tail[-1].rstrip(".").lower() in _ABBREV and not m.group(0).startswith("\n"):
            continue  # "Dr. Smith": not a boundary
        if text[start:end].strip():
            spans.append(_strip_span(text, start, end))
        start = m.end()
    if text[start:].strip():
        spans.append(_strip_span(text, start, len(text)))
    return spans


def _strip_span(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def _split_long(text: str, start: int, end: int, max_tokens: int) -> list[tuple[int, int]]:
    """A sentence longer than the window is cut at token boundaries."""
    toks = [(m.start() + start, m.end() + start) for m in _TOKEN_RE.finditer(text[start:end])]
    return [(toks[i][0], toks[min(i + max_tokens, len(toks)) - 1][1]) for i in range(0, len(toks), max_tokens)]


def chunk_id_for(doc_id: str, text: str) -> str:
    digest = hashlib.sha256(f"{doc_id}\x00{text}".encode()).hexdigest()
    return f"c_{digest[:20]}"


def chunk_document(doc: Document, config: ChunkingConfig | None = None) -> list[Chunk]:
    """Windows of whole sentences up to `max_tokens`, each starting with ~`overlap_tokens` of the previous."""
    cfg = config or ChunkingConfig()
    text = doc.text
    units: list[tuple[int, int, int]] = []  # (start, end, tokens)
    for s, e in split_sentences(text):
        n = count_tokens(text[s:e])
        if n > cfg.max_tokens:
            for ps, pe in _split_long(text, s, e, cfg.max_tokens):
                units.append((ps, pe, count_tokens(text[ps:pe])))
        elif n:
            units.append((s, e, n))
    chunks: list[Chunk] = []
    i = 0
    seen: set[str] = set()
    while i < len(units):
        j, total = i, 0
        while j < len(units) and (total + units[j][2] <= cfg.max_tokens or j == i):
            total += units[j][2]
            j += 1
        start, end = units[i][0], units[j - 1][1]
        body = text[start:end]
        cid = chunk_id_for(doc.doc_id, body)
        if cid in seen:  # the same text twice in one document: the repeat is told apart by its position
            cid = chunk_id_for(doc.doc_id, f"{len(chunks)}\x00{body}")
        seen.add(cid)
        chunks.append(Chunk(chunk_id=cid, doc_id=doc.doc_id, title=doc.title, text=body,
                            index=len(chunks), start_char=start, end_char=end))
        if j >= len(units):
            break
        # next window starts so that it re-includes up to overlap_tokens of whole sentences
        back, k = 0, j
        while k - 1 > i and back + units[k - 1][2] <= cfg.overlap_tokens:
            back += units[k - 1][2]
            k -= 1
        i = k
    return chunks
