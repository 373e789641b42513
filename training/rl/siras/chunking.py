"""Hybrid chunking of a rollout: structural markers, surprise peaks, max length (vectorised, numpy).

A chunk is a run of consecutive valid tokens; chunking returns, per token, whether it opens a chunk.
Structural markers are read off the tokenizer's vocabulary once (:class:`StructureMarkers`): a token
containing a blank line closes a chunk; a list/step marker right after a newline opens one; tool-call
/ think tags open (``<tool_call>``) or close (``</tool_call>``) one. Callers may add forced breaks (e.g.
where masked tool-result tokens were cut out of the rollout).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from training.rl.siras.config import SirasConfig

_OPEN_TAGS = ("<tool_call>", "<tool_response>", "<think>", "<|im_start|>")
_CLOSE_TAGS = ("</tool_call>", "</tool_response>", "</think>", "<|im_end|>")
_LIST_MARKER = re.compile(r"^\s*(\d{1,3}[.)]?|[-*•>]|#{1,6}|step|Step|STEP)$")


class TokenizerLike(Protocol):
    def convert_ids_to_tokens(self, ids: list[int]) -> list[str]: ...

    def decode(self, ids: list[int]) -> str: ...

    def __len__(self) -> int: ...


@dataclass(frozen=True)
class StructureMarkers:
    """Per-vocabulary-id flags: ``split_before`` opens a chunk, ``split_after`` closes one,
    ``newline`` contains a line break, ``list_marker`` opens a chunk when it follows a newline."""

    split_before: np.ndarray
    split_after: np.ndarray
    newline: np.ndarray
    list_marker: np.ndarray

    @classmethod
    def empty(cls, vocab_size: int) -> StructureMarkers:
        z = np.zeros(vocab_size, dtype=bool)
        return cls(z, z.copy(), z.copy(), z.copy())

    @classmethod
    def from_tokenizer(cls, tokenizer: TokenizerLike) -> StructureMarkers:
        """Classify every vocabulary entry by its decoded text (once per tokenizer)."""
        n = len(tokenizer)
        m = cls.empty(n)
        for i in range(n):
            text = tokenizer.decode([i])
            if not text:
                continue
            if any(tag in text for tag in _OPEN_TAGS):
                m.split_before[i] = True
            if any(tag in text for tag in _CLOSE_TAGS) or "\n\n" in text:
                m.split_after[i] = True
            if "\n" in text:
                m.newline[i] = True
            if _LIST_MARKER.match(text):
                m.list_marker[i] = True
        return m

    def lookup(self, table: np.ndarray, ids: np.ndarray) -> np.ndarray:
        ok = (ids >= 0) & (ids < table.shape[0])
        out = np.zeros(ids.shape, dtype=bool)
        out[ok] = table[ids[ok]]
        return out


SURPRISE_CAP = 50.0  # nats: a −inf log-prob (probability 0 under the sampler) counts as this surprising


def surprise(logprobs: np.ndarray) -> np.ndarray:
    """Per-token surprise −log p (float64), made safe: a −inf log-prob gives ``SURPRISE_CAP``; a NaN or
    +inf log-prob (no valid probability) gives NaN = unknown (never a peak, left out of profiles);
    a log-prob slightly above 0 (round-off) gives 0."""
    lp = np.asarray(logprobs, dtype=np.float64)
    s = np.where(np.isneginf(lp), SURPRISE_CAP, -lp)
    s = np.where(np.isnan(lp) | np.isposinf(lp), np.nan, s)
    return np.where(s < 0.0, 0.0, np.minimum(s, SURPRISE_CAP))


def surprise_peaks(logprobs: np.ndarray, config: SirasConfig) -> np.ndarray:
    """Tokens whose surprise −log p exceeds both the absolute threshold and mean + z·std of the rollout's
    known surprises (non-finite log-probs: see :func:`surprise`)."""
    s = surprise(logprobs)
    known = ~np.isnan(s)
    if not known.any():
        return np.zeros(s.size, dtype=bool)
    rel = s[known].mean() + config.surprise_z * s[known].std()
    return (
        known & (np.nan_to_num(s, nan=-1.0) > config.surprise_threshold) & (np.nan_to_num(s, nan=-1.0) > rel)
    )


def _since_last(starts: np.ndarray) -> np.ndarray:
    """Distance of every position to the most recent True in ``starts`` (position 0 counts as True)."""
    idx = np.arange(starts.size)
    last = np.maximum.accumulate(np.where(starts, idx, 0))
    return idx - last


def chunk_starts(
    token_ids: np.ndarray,
    logprobs: np.ndarray | None,
    config: SirasConfig,
    markers: StructureMarkers | None = None,
    breaks: np.ndarray | None = None,
) -> np.ndarray:
    """Boolean (T,) array: True where a chunk begins. ``starts[0]`` is True when T > 0."""
    ids = np.asarray(token_ids, dtype=np.int64)
    t = ids.size
    starts = np.zeros(t, dtype=bool)
    if t == 0:
        return starts
    starts[0] = True
    if config.chunking != "fixed":
        if markers is not None:
            starts |= markers.lookup(markers.split_before, ids)
            after = markers.lookup(markers.split_after, ids)
            starts[1:] |= after[:-1]
            nl = markers.lookup(markers.newline, ids)
            starts[1:] |= markers.lookup(markers.list_marker, ids[1:]) & nl[:-1]
            starts[2:] |= nl[1:-1] & nl[:-2]  # a blank line split over two newline tokens
        if breaks is not None:
            starts |= np.asarray(breaks, dtype=bool)
        if config.chunking == "hybrid" and logprobs is not None:
            since = _since_last(starts)
            last = -config.min_chunk_len
            for p in np.flatnonzero(surprise_peaks(logprobs, config)):  # peaks are rare: a short loop
                if since[p] >= config.min_chunk_len and p - last >= config.min_chunk_len:
                    starts[p] = True
                    last = p
    # max length: force a start every max_chunk_len tokens after the last start
    off = _since_last(starts)
    starts |= (off > 0) & (off % config.max_chunk_len == 0)
    return starts


def chunk_index(starts: np.ndarray) -> np.ndarray:
    """Per-token chunk number (0-based) from chunk starts."""
    return np.cumsum(starts) - 1
