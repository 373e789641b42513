"""Personalised PageRank over the passage graph (HippoRAG's retrieval step), held in memory.

Nodes are passages (chunks) and entities; an entity is linked to every passage that mentions it, and
more strongly to the passage it is the subject of (its own article). A random walk restarts at the
question's seeds: the entities linked in the question, weighted by specificity (an entity few
passages mention counts more, HippoRAG's node specificity), and the dense top passages with a
small weight (HippoRAG 2). The stationary mass on passage nodes ranks passages: a bridge entity named
by few passages carries the walk from the first hop's passage to the second's, while hub entities
("United States") spread their mass too thinly to matter.

Built once from the graph store (all MENTIONED_IN edges of entities) and cached until the index
changes; one query costs a few sparse matrix-vector products.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np
from scipy import sparse

from eventrag.storage.base import Edge


@dataclass(frozen=True)
class PPRConfig:
    damping: float = 0.5  # probability of following an edge (HippoRAG: 0.5); else restart at the seeds
    topic_weight: float = 2.0  # entity <-> its own passage, relative to a plain mention
    max_iter: int = 30
    tol: float = 1e-7


@dataclass
class PassageGraph:
    chunk_ids: list[str]
    entity_ids: list[str]
    row: dict[str, int]  # node id -> index (chunks first, then entities)
    walk: sparse.csr_matrix  # walk[i, j]: probability of stepping j -> i (column-stochastic)
    entity_degree: np.ndarray  # passages per entity
    topic: dict[str, list[str]] = field(default_factory=dict)  # entity -> passages it is the subject of
    mentioned: dict[str, list[str]] = field(default_factory=dict)  # entity -> other passages naming it
    named_in: dict[str, list[str]] = field(default_factory=dict)  # passage -> entities it names
    config: PPRConfig = field(default_factory=PPRConfig)

    @classmethod
    def build(cls, chunk_ids: Iterable[str], mentions: Iterable[Edge], entity_ids: set[str],
              config: PPRConfig | None = None) -> PassageGraph:
        """`mentions`: MENTIONED_IN edges -> chunk; those from `entity_ids` are kept (`props["topic"]`
        marks the entity's own passage), those from events or to unknown chunks are ignored."""
        cfg = config or PPRConfig()
        chunks = list(dict.fromkeys(chunk_ids))
        row = {c: i for i, c in enumerate(chunks)}
        entities: list[str] = []
        src: list[int] = []
        dst: list[int] = []
        wts: list[float] = []
        topic: dict[str, list[str]] = {}
        mentioned: dict[str, list[str]] = {}
        named_in: dict[str, list[str]] = {}
        for e in mentions:
            c = row.get(e.dst)
            if c is None or e.src not in entity_ids:
                continue
            if e.src not in row:
                row[e.src] = len(chunks) + len(entities)
                entities.append(e.src)
            src.append(row[e.src])
            dst.append(c)
            is_topic = bool(e.props.get("topic"))
            wts.append(cfg.topic_weight if is_topic else 1.0)
            (topic if is_topic else mentioned).setdefault(e.src, []).append(e.dst)
            named_in.setdefault(e.dst, []).append(e.src)
        n = len(chunks) + len(entities)
        w = np.asarray(wts, dtype=np.float64)
        s, d = np.asarray(src, dtype=np.int64), np.asarray(dst, dtype=np.int64)
        adj = sparse.coo_matrix((np.concatenate([w, w]), (np.concatenate([s, d]), np.concatenate([d, s]))),
                                shape=(n, n)).tocsr()
        adj.sum_duplicates()
        out_weight = np.asarray(adj.sum(axis=1)).ravel()
        inv = np.divide(1.0, out_weight, out=np.zeros_like(out_weight), where=out_weight > 0)
        walk = (sparse.diags(inv) @ adj).T.tocsr()  # column j: where a walker at j goes
        degree = np.asarray((adj[len(chunks):, :len(chunks)] > 0).sum(axis=1)).ravel().astype(np.float64)
        return cls(chunk_ids=chunks, entity_ids=entities, row=row, walk=walk, entity_degree=degree, topic=topic,
                   mentioned=mentioned, named_in=named_in, config=cfg)

    def degree(self, entity_id: str) -> int:
        i = self.row.get(entity_id, -1)
        return int(self.entity_degree[i - len(self.chunk_ids)]) if i >= len(self.chunk_ids) else 0

    def run(self, entity_seeds: Mapping[str, float], passage_seeds: Mapping[str, float],
            passage_weight: float = 0.05, damping: float | None = None) -> np.ndarray:
        """Stationary distribution over all nodes. Entity seeds are weighted by 1/degree (specificity);
        the passage seeds' total mass is `passage_weight` x the entities' (all of it when no entity links)."""
        n = self.walk.shape[0]
        reset = np.zeros(n, dtype=np.float64)
        for eid, w in entity_seeds.items():
            i = self.row.get(eid)
            if i is not None and i >= len(self.chunk_ids) and w > 0:
                reset[i] += w / max(self.entity_degree[i - len(self.chunk_ids)], 1.0)
        ent_mass = reset.sum()
        ps = np.zeros(n, dtype=np.float64)
        for cid, w in passage_seeds.items():
            i = self.row.get(cid)
            if i is not None and i < len(self.chunk_ids) and w > 0:
                ps[i] += w
        if ps.sum() > 0:
            reset += ps / ps.sum() * (passage_weight * ent_mass if ent_mass > 0 else 1.0)
        if reset.sum() <= 0:
            return np.zeros(n, dtype=np.float64)
        reset /= reset.sum()
        d = self.config.damping if damping is None else damping
        r = reset.copy()
        for _ in range(self.config.max_iter):
            nxt = (1.0 - d) * reset + d * (self.walk @ r)
            nxt /= max(nxt.sum(), 1e-300)  # dangling nodes leak mass: keep it a distribution
            if np.abs(nxt - r).sum() < self.config.tol:
                r = nxt
                break
            r = nxt
        return r

    def top_passages(self, scores: np.ndarray, k: int) -> list[tuple[str, float]]:
        """The k passages with the most mass, best first, scores scaled so the best is 1."""
        m = len(self.chunk_ids)
        if m == 0 or k < 1:
            return []
        part = scores[:m]
        k = min(k, m)
        idx = np.argpartition(-part, k - 1)[:k]
        idx = idx[np.argsort(-part[idx], kind="stable")]
        top = float(part[idx[0]]) if len(idx) else 0.0
        if top <= 0:
            return []
        return [(self.chunk_ids[i], float(part[i]) / top) for i in idx if part[i] > 0]
