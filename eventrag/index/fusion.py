"""Entity fusion: one node per real-world entity across chunks and documents.

Two names are fused when they normalise to the same key, or when their name embeddings are within a
cosine threshold AND the names are compatible (token subset, acronym, or near-identical spelling) AND
their types do not conflict. Aliases and provenance are kept; every non-trivial fusion is recorded as
an `EntityMerge`.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from eventrag.embed import Embedder
from eventrag.index.extract import norm_name
from eventrag.schema import ChunkExtraction, Entity, EntityMerge


class EntityIndex(Protocol):
    """What fusion needs from the stores: existing entities by id, and nearest names by vector."""

    def existing(self, ids: Sequence[str]) -> dict[str, Entity]: ...

    def nearest(self, vectors: np.ndarray, top_k: int) -> list[list[tuple[str, float]]]: ...


_ORDINAL = re.compile(r"^(?:\d+|[ivxlc]+)$")


def name_compatible(a: str, b: str) -> bool:
    na, nb = norm_name(a), norm_name(b)
    if not na or not nb:
        return False
    if na == nb:
        return True
    ta, tb = set(na.split()), set(nb.split())
    ordinals_a, ordinals_b = {t for t in ta if _ORDINAL.match(t)}, {t for t in tb if _ORDINAL.match(t)}
    if ordinals_a != ordinals_b and ordinals_a and ordinals_b:
        return False  # "Lothair I" is not "Lothair II", "Apollo 11" is not "Apollo 13"
    if ta <= tb or tb <= ta:
        shorter = min(ta, tb, key=len)
        # a lone short token ("ii", "the") is not enough evidence
        return any(len(t) > 3 for t in shorter)
    for short, long_ in ((na, nb), (nb, na)):
        if " " not in short and len(short) >= 2 and short == "".join(w[0] for w in long_.split() if w):
            return True  # acronym: "un" / "united nations"
    return difflib.SequenceMatcher(None, na, nb).ratio() >= 0.9


def types_compatible(a: str, b: str) -> bool:
    return a == b or "OTHER" in (a, b)


@dataclass
class FusionResult:
    entities: dict[str, Entity] = field(default_factory=dict)  # final id -> merged entity (to upsert)
    id_map: dict[str, str] = field(default_factory=dict)  # provisional id -> final id
    merges: list[EntityMerge] = field(default_factory=list)
    new_ids: set[str] = field(default_factory=set)  # entities that did not exist before (need vectors)


def _absorb(into: Entity, other: Entity) -> None:
    if norm_name(other.name) != norm_name(into.name) and other.name not in into.aliases:
        into.aliases.append(other.name)
    for alias in other.aliases:
        if alias not in into.aliases and norm_name(alias) != norm_name(into.name):
            into.aliases.append(alias)
    into.chunk_ids = list(dict.fromkeys(into.chunk_ids + other.chunk_ids))
    into.doc_ids = list(dict.fromkeys(into.doc_ids + other.doc_ids))
    if not into.description and other.description:
        into.description = other.description
    if into.type == "OTHER" and other.type != "OTHER":
        into.type = other.type


class EntityFuser:
    def __init__(self, embedder: Embedder, index: EntityIndex, threshold: float = 0.9, top_k: int = 3) -> None:
        if not 0.0 < threshold <= 1.0:
            raise ValueError("fusion threshold must be in (0, 1]")
        self.embedder = embedder
        self.index = index
        self.threshold = threshold
        self.top_k = top_k
        self.vectors: dict[str, np.ndarray] = {}  # final id -> name vector, for entities new in this batch

    def fuse(self, extractions: Sequence[ChunkExtraction]) -> FusionResult:
        res = FusionResult()
        batch = _batch_entities(extractions)  # 1. exact key: same normalised name within the batch
        if not batch:
            return res
        existing = self.index.existing(list(batch))
        pending: list[Entity] = []
        for eid, ent in batch.items():
            if eid in existing:
                kept = existing[eid]
                _absorb(kept, ent)
                res.entities[eid] = kept
                res.id_map[eid] = eid
            else:
                pending.append(ent)
        if not pending:
            return res
        vecs = np.asarray(self.embedder.embed([e.name for e in pending]), dtype=np.float32)
        unresolved = self._match_stored(pending, vecs, res)  # 2. nearest existing entity in the store
        if unresolved:  # 3. among the new names of this batch
            self._group_new([pending[i] for i in unresolved], vecs[unresolved], res)
        return res

    def _match_stored(self, pending: list[Entity], vecs: np.ndarray, res: FusionResult) -> list[int]:
        """Absorb each pending entity into a compatible stored one within the threshold; returns the
        positions of those left unresolved."""
        hits = self.index.nearest(vecs, self.top_k)
        cand_ids = list({h for row in hits for h, s in row if s >= self.threshold})
        cands = self.index.existing(cand_ids) if cand_ids else {}
        unresolved: list[int] = []
        for i, ent in enumerate(pending):
            target = None
            for hid, score in hits[i]:
                c = res.entities.get(hid) or cands.get(hid)
                if c is not None and score >= self.threshold and name_compatible(ent.name, c.name) \
                        and types_compatible(ent.type, c.type):
                    target = (c, score)
                    break
            if target is None:
                unresolved.append(i)
                continue
            kept, score = target
            _absorb(kept, ent)
            res.entities[kept.entity_id] = kept
            res.id_map[ent.entity_id] = kept.entity_id
            res.merges.append(EntityMerge(kept_id=kept.entity_id, kept_name=kept.name, merged_name=ent.name,
                                          similarity=round(float(score), 4), chunk_ids=ent.chunk_ids))
        return unresolved

    def _group_new(self, ents: list[Entity], vecs: np.ndarray, res: FusionResult) -> None:
        """Union compatible new names within the threshold; each group is kept under its most-mentioned name."""
        parent = list(range(len(ents)))

        def find(x: int) -> int:
            while parent[x] != x:
                parent[x] = parent[parent[x]]
                x = parent[x]
            return x

        for a, b in close_pairs(vecs, self.threshold):
            if name_compatible(ents[a].name, ents[b].name) and types_compatible(ents[a].type, ents[b].type):
                parent[find(b)] = find(a)
        groups: dict[int, list[int]] = {}
        for k in range(len(ents)):
            groups.setdefault(find(k), []).append(k)
        for members in groups.values():
            head_k = max(members, key=lambda k: (len(ents[k].chunk_ids), -len(ents[k].name)))
            head = ents[head_k]
            for k in members:
                res.id_map[ents[k].entity_id] = head.entity_id
                if k != head_k:
                    _absorb(head, ents[k])
                    res.merges.append(EntityMerge(kept_id=head.entity_id, kept_name=head.name,
                                                  merged_name=ents[k].name,
                                                  similarity=round(float(vecs[head_k] @ vecs[k]), 4),
                                                  chunk_ids=ents[k].chunk_ids))
            res.entities[head.entity_id] = head
            res.new_ids.add(head.entity_id)
            self.vectors[head.entity_id] = vecs[head_k]


def _batch_entities(extractions: Sequence[ChunkExtraction]) -> dict[str, Entity]:
    """The batch's entities by id, mentions of one id absorbed into its first."""
    batch: dict[str, Entity] = {}
    for ext in extractions:
        for ent in ext.entities:
            if ent.entity_id in batch:
                _absorb(batch[ent.entity_id], ent)
            else:
                batch[ent.entity_id] = ent.model_copy(deep=True)
    return batch


def close_pairs(vecs: np.ndarray, threshold: float, block: int = 1024) -> Iterator[tuple[int, int]]:
    """Pairs (a < b) of rows whose dot product is at least `threshold`, in row order; the similarity
    matrix is computed a block of rows at a time, so memory stays at `block` x n whatever n is."""
    n = len(vecs)
    for start in range(0, n, block):
        sims = vecs[start:start + block] @ vecs.T
        rows, cols = np.nonzero(sims >= threshold)
        for r, c in zip(rows.tolist(), cols.tolist(), strict=True):
            if start + r < c:
                yield start + r, c
