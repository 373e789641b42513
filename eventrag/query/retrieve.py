"""Retriever: naive / graph / event / agentic retrieval over the event graph (implements SearchBackend).

- naive: dense search over chunks.
- graph: seeds = dense + BM25 chunks and the entities named in the question (lexicon, name vectors of
  the question's spans, entity vectors); the entity neighbourhood adds each linked entity's own passage
  and, one hop further, the passages of the entities that the best passages mention (bridges);
  personalised PageRank from the linked entities and dense passages scores passages further away.
- event: graph + event seeds (event vectors, events of linked entities), k-hop expansion in the graph
  store along temporal/causal/participation edges under the question's time filter; a chunk gains the
  score of the events it states. Inferred edges may bring a chunk in but never add evidence score.
- agentic: decomposition (one structured LLM call, or rules), event retrieval per sub-query, then a
  reflection step that judges sufficiency and issues new sub-queries, for up to `max_rounds` rounds.

Query time reads the in-memory snapshot (`query_cache.py`: BM25, lexicon, passage graph, vector
matrices) and touches the graph store only for the event walk (one recursive query) and the texts of
the chunks it returns; query vectors are cached (LRU), so a repeated or re-asked query is not re-embedded.
"""

from __future__ import annotations

import re
import threading
import time
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np

from eventfold.llm.types import ChatModel
from eventrag.embed import Embedder
from eventrag.graph_io import node_to_chunk
from eventrag.query.cache import QueryCache, QuerySnapshot
from eventrag.query.decompose import Decomposition, llm_decompose, llm_reflect, rule_decompose, rule_reflect
from eventrag.query.event_walk import EVENT_EDGES, WalkedNode, WalkResult
from eventrag.query.lexical import minmax
from eventrag.query.ranking import Candidates, RetrievalConfig
from eventrag.schema import Chunk, RetrievalMode, RetrievalResult
from eventrag.storage.base import GraphStore, VectorStore


def _lowercase_in(text: str, key: str) -> bool:
    """True when the normalised span `key` occurs in `text` only in lower case (a common word, not a name)."""
    words = key.split()
    if not words:
        return False
    rx = re.compile(r"\b" + r"\W+".join(re.escape(w) for w in words) + r"\b", re.IGNORECASE)
    found = [m.group(0) for m in rx.finditer(text)]
    return bool(found) and not any(ch.isupper() for f in found for ch in f)


class QueryVectors:
    """LRU cache of query embeddings; misses are embedded in one batch."""

    def __init__(self, embedder: Embedder, size: int = 2048) -> None:
        self.embedder, self.size = embedder, size
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        if missing:
            vecs = np.asarray(self.embedder.embed(missing), dtype=np.float32)
            with self._lock:
                for t, v in zip(missing, vecs, strict=True):
                    self._cache[t] = v
                while len(self._cache) > self.size:
                    self._cache.popitem(last=False)
        with self._lock:
            out = []
            for t in texts:
                self._cache.move_to_end(t)
                out.append(self._cache[t])
        return np.stack(out) if out else np.zeros((0, self.embedder.dim), dtype=np.float32)

    def clear(self) -> None:
        with self._lock:
            self._cache.clear()


class Retriever:
    def __init__(self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, collections: dict[str, str],
                 *, chat_model: ChatModel | None = None, config: RetrievalConfig | None = None,
                 cache: QueryCache | None = None) -> None:
        self.graph, self.vectors, self.embedder = graph, vectors, embedder
        self.collections = collections
        self.chat_model = chat_model
        self.config = config or RetrievalConfig()
        self.cache = cache or QueryCache(graph, vectors, collections, dim=embedder.dim)
        self.query_vectors = QueryVectors(embedder)

    # --- SearchBackend ------------------------------------------------------------------------
    def get_chunk(self, chunk_id: str) -> Chunk | None:
        nodes = self.graph.get_nodes([chunk_id])
        return node_to_chunk(nodes[0]) if nodes and nodes[0].label == "Chunk" else None

    def get_document_chunks(self, doc_id: str) -> list[Chunk]:
        nodes = self.graph.find_nodes("Chunk", doc_id=doc_id, limit=1_000_000)
        return sorted((node_to_chunk(n) for n in nodes), key=lambda c: c.index)

    def retrieve(self, query: str, *, mode: RetrievalMode | None = None, top_k: int = 5) -> RetrievalResult:
        if not isinstance(query, str) or not query.strip():
            raise ValueError("query must be a non-empty string")
        if top_k < 1:
            raise ValueError("top_k must be >= 1")
        mode = mode or self.config.default_mode
        t0 = time.perf_counter()
        llm_errors: list[str] = []
        if mode == "naive":
            cands, rounds, subs, calls = self._naive(query, top_k), 1, [query], 0
        elif mode in ("graph", "event"):
            decomp = rule_decompose(query)
            cands = self._one_query(query, decomp, mode, top_k)
            rounds, subs, calls = 1, [query], 0
        elif mode == "agentic":
            cands, rounds, subs, calls = self._agentic(query, top_k, llm_errors)
        else:
            raise ValueError(f"unknown retrieval mode {mode!r}; use naive, graph, event or agentic")
        chunks = cands.top(top_k, self.graph)
        half_written = self._pending_docs({c.doc_id for c in chunks})
        if half_written:  # a crash mid-document left these: never evidence
            chunks = cands.top(top_k, self.graph, skip_docs=half_written | self.cache.get().lexical.pending_docs)
        return RetrievalResult(query=query, mode=mode, chunks=chunks, rounds=rounds, sub_queries=subs,
                               llm_calls=calls, llm_errors=llm_errors, elapsed_s=round(time.perf_counter() - t0, 4))

    # --- building blocks ----------------------------------------------------------------------
    def _pending_docs(self, doc_ids: set[str]) -> set[str]:
        if not doc_ids:
            return set()
        return {n.id for n in self.graph.get_nodes(sorted(doc_ids))
                if n.label == "Document" and n.props.get("status") == "pending"}

    def _embed(self, text: str) -> np.ndarray:
        return self.query_vectors.get([text])

    def _search(self, snap: QuerySnapshot, kind: str, qvecs: np.ndarray, k: int) -> list[list[tuple[str, float]]]:
        """Top-k per query vector: the in-memory matrix when the snapshot holds one, else one store call."""
        qvecs = np.asarray(qvecs, dtype=np.float32).reshape(-1, self.embedder.dim)
        if kind in snap.vectors:
            return snap.vectors[kind].search(qvecs, k)
        hits = self.vectors.search(self.collections[kind], qvecs, top_k=k)
        return [[(h.id, float(h.score)) for h in row] for row in hits] if hits else [[] for _ in qvecs]

    def _fill_sims(self, snap: QuerySnapshot, cands: Candidates, qvec: np.ndarray) -> None:
        missing = cands.missing_sims()
        if not missing:
            return
        if "chunks" in snap.vectors:
            cands.set_sims(snap.vectors["chunks"].sims(missing, qvec))
            return
        q = np.asarray(qvec, dtype=np.float32).reshape(-1)
        sims = {}
        for rec in self.vectors.get(self.collections["chunks"], missing):
            v = np.asarray(rec.vector, dtype=np.float32)
            sims[rec.id] = float(v @ q / max(float(np.linalg.norm(v)), 1e-12))
        cands.set_sims(sims)

    def _naive(self, query: str, top_k: int) -> Candidates:
        cands = Candidates(self.config)
        for cid, sim in self._search(self.cache.get(), "chunks", self._embed(query), top_k)[0]:
            cands.add(cid, sim=sim, path=["dense:chunk"])
        return cands

    def _link(self, snap: QuerySnapshot, query: str, decomp: Decomposition,
              qvec: np.ndarray) -> dict[str, tuple[str, float]]:
        """Entities of the question: names in it (lexicon), the decomposition's names (exact, else by
        name vector against the fused entity table), and the nearest topical entity vectors."""
        cfg, lex = self.config, snap.lexical
        links = {}
        for lnk in lex.link(query):
            conf = min(1.0, 0.5 + 0.15 * lnk.specificity)
            if cfg.lowercase_link_weight != 1.0 and _lowercase_in(query, lnk.matched):
                conf *= cfg.lowercase_link_weight
            links[lnk.entity_id] = (lnk.name, conf)
        unlinked = []
        for name in decomp.entities:
            found = lex.link(name, limit=1)
            for lnk in found:
                links.setdefault(lnk.entity_id, (lnk.name, 0.8))
            if not found:
                unlinked.append(name)
        if unlinked and cfg.span_link_min > 0:
            for hits in self._search(snap, "entities", self.query_vectors.get(unlinked), 1):
                for eid, sim in hits:
                    if sim >= cfg.span_link_min:
                        links.setdefault(eid, (lex.display.get(eid, eid), 0.8 * sim))
        for eid, sim in self._search(snap, "entities", qvec, cfg.entity_seeds)[0]:
            if sim >= cfg.entity_sim_min and eid in lex.topical:
                links.setdefault(eid, (lex.display.get(eid, eid), sim * 0.8))
        return links

    def _one_query(self, query: str, decomp: Decomposition, mode: str, top_k: int, round_no: int = 1,
                   qvec: np.ndarray | None = None) -> Candidates:
        cfg = self.config
        snap = self.cache.get()
        lex, pg = snap.lexical, snap.passages
        qvec = self._embed(query) if qvec is None else qvec
        cands = Candidates(cfg, round_no=round_no)
        k = max(cfg.candidates, top_k)
        dense = self._search(snap, "chunks", qvec, k)[0]
        for cid, sim in dense:
            cands.add(cid, sim=sim, path=["dense:chunk"])
        for cid, s in minmax(dict(lex.search(query, k))).items():
            cands.add(cid, lex=s, path=["bm25:chunk"])
        links = self._link(snap, query, decomp, qvec)
        for eid, (name, conf) in links.items():
            # the entity's own passage; for an entity that has none, the passages that mention it
            own = snap.own_passages(eid)
            weight = 1.0 if own else cfg.mention_weight
            own = own or pg.mentioned.get(eid, [])[: cfg.mention_chunks]
            for cid in own:
                cands.add(cid, link=conf * weight, path=[f"seed:entity:{name}", f"MENTIONED_IN>chunk:{cid}"])
        if cfg.w_ppr > 0 and (links or dense):
            self._ppr(snap, links, dense, cands)
        # bridges: entities mentioned in the best passages -> their own passages
        self._fill_sims(snap, cands, qvec)
        parents = cands.ranked()[: cfg.bridge_parents]
        parent_score = dict(parents)
        ents_of: dict[str, list[str]] = {}
        for pid, _ in parents:
            for eid in pg.named_in.get(pid, ()):
                if eid not in links:
                    ents_of.setdefault(eid, []).append(pid)
        top_parent = max(parent_score.values(), default=1.0) or 1.0
        for eid, pids in ents_of.items():
            best = max(pids, key=lambda p: parent_score[p])
            strength = parent_score[best] / top_parent
            via = [f"seed:chunk:{best}", f"<MENTIONED_IN entity:{lex.display.get(eid, eid)}"]
            for cid in snap.own_passages(eid):
                if cid != best:
                    cands.add(cid, bridge=strength, path=[*via, f"MENTIONED_IN>chunk:{cid}"])
            others = pg.mentioned.get(eid, [])
            if len(others) <= cfg.bridge_mentions:  # a specific entity: every passage naming it may be the next hop
                for cid in others:
                    if cid != best:
                        cands.add(cid, bridge=strength * cfg.mention_weight, path=[*via, f"MENTIONED_IN>chunk:{cid}"])
        if mode == "event":
            self._event_expand(snap, qvec, decomp, links, cands)
        self._fill_sims(snap, cands, qvec)
        return cands

    def _ppr(self, snap: QuerySnapshot, links: dict[str, tuple[str, float]], dense: list[tuple[str, float]],
             cands: Candidates) -> None:
        cfg, pg = self.config, snap.passages
        seeds = {eid: conf for eid, (_, conf) in links.items()}
        scores = pg.run(seeds, dict(dense[: cfg.ppr_passage_seeds]), passage_weight=cfg.ppr_passage_weight,
                        damping=cfg.ppr_damping)
        named = [name for _, (name, _) in sorted(links.items(), key=lambda x: -x[1][1])[:2]]
        via = [f"seed:entity:{n}" for n in named] or ["seed:dense"]
        for cid, s in pg.top_passages(scores, cfg.ppr_top):
            cands.add(cid, ppr=s, path=[*via, f"PPR>chunk:{cid}"])

    def _event_expand(self, snap: QuerySnapshot, qvec: np.ndarray, decomp: Decomposition,
                      links: dict[str, tuple[str, float]], cands: Candidates) -> None:
        cfg = self.config
        seeds = dict(self._search(snap, "events", qvec, cfg.event_seeds)[0])
        if links:  # events the linked entities take part in
            for e in self.graph.get_edges(list(links), edge_types=["PARTICIPATES_IN"])[: cfg.event_seeds * 4]:
                if e.src in links:
                    seeds.setdefault(e.dst, 0.5 * links[e.src][1])
        if not seeds:
            return
        exp = self._walk(snap, list(seeds), decomp)
        inferred = exp.inferred
        for xn in exp.nodes:
            if xn.label != "Event":
                continue
            base = seeds.get(xn.seed, 0.0)
            score = base * (cfg.hop_decay ** xn.hop)
            via_inferred = matched = False
            wanted = {decomp.relation, "BEFORE" if decomp.relation == "AFTER" else decomp.relation}
            for i, lab in enumerate(xn.path_edges):
                typ = lab.strip("<>")
                a, b = xn.path[i], xn.path[i + 1]
                key = (a, typ, b) if lab.endswith(">") else (b, typ, a)
                via_inferred |= key in inferred
                if decomp.relation and typ in wanted and key not in inferred:
                    score *= cfg.relation_boost
                    matched = True
            if decomp.relation and xn.hop > 0 and not matched:
                score *= cfg.relation_miss  # the question names a relation this path does not follow
            path = [f"seed:event:{xn.seed}"] + [f"{lab} {p}" for lab, p in zip(xn.path_edges, xn.path[1:], strict=False)]
            for cid in xn.chunk_ids:
                # an inferred edge may bring a chunk in, but adds no evidence score of its own
                cands.add(cid, event=0.0 if via_inferred else score, path=[*path, f"MENTIONED_IN>chunk:{cid}"],
                          inferred=via_inferred)

    def _walk(self, snap: QuerySnapshot, seeds: list[str], decomp: Decomposition) -> WalkResult:
        """Event mode's walk: in memory when the snapshot holds the event graph, else one store query."""
        cfg = self.config
        if snap.events is not None:
            return snap.events.walk(seeds, hops=cfg.hops, edge_types=EVENT_EDGES, time_from=decomp.time_from,
                                    time_to=decomp.time_to, limit=cfg.expand_limit)
        exp = self.graph.expand(seeds, hops=cfg.hops, edge_types=list(EVENT_EDGES), direction="both",
                                time_from=decomp.time_from, time_to=decomp.time_to, limit=cfg.expand_limit)
        return WalkResult(
            nodes=[WalkedNode(id=x.node.id, label=x.node.label, chunk_ids=tuple(x.node.props.get("chunk_ids") or ()),
                              hop=x.hop, seed=x.seed, path=tuple(x.path), path_edges=tuple(x.path_edges))
                   for x in exp.nodes],
            inferred={e.key for e in exp.edges if e.inferred})

    def _agentic(self, question: str, top_k: int, errors: list[str]) -> tuple[Candidates, int, list[str], int]:
        """Returns (candidates, rounds, sub-queries asked, LLM calls that answered). A failed LLM call is
        recorded in `errors` and the rest of this retrieval runs on the rules (no call to a dead server)."""
        cfg = self.config
        calls = 0
        if self.chat_model is not None:
            decomp = llm_decompose(self.chat_model, question, errors)
            calls += 0 if errors else 1
        else:
            decomp = rule_decompose(question)
        asked: list[str] = []
        pending = list(dict.fromkeys(decomp.sub_queries or [question]))
        merged: Candidates | None = None
        qvec = self._embed(question)
        snap = self.cache.get()
        rounds = 0
        prev_top: list[str] = []
        sources: dict[str, set[str]] = {}
        while pending and rounds < cfg.max_rounds:
            rounds += 1
            qvecs = self.query_vectors.get(pending)  # one embedding batch per round
            for q, v in zip(pending, qvecs, strict=True):
                asked.append(q)
                found = self._one_query(q, decomp, "event", top_k, round_no=rounds, qvec=v)
                if merged is None:
                    merged = found
                else:
                    merged.merge(found, weight=cfg.followup_weight, exclude=sources.get(q))
            assert merged is not None
            self._fill_sims(snap, merged, qvec)  # newcomers vs the question
            top = merged.ranked()[:top_k]
            top_ids = [c for c, _ in top]
            new = [c for c in top_ids if c not in prev_top]
            if rounds >= cfg.max_rounds:
                break
            passages = merged.texts(top_ids, self.graph)
            refl = None
            if self.chat_model is not None and not errors:
                refl = llm_reflect(self.chat_model, question, passages, asked, errors)
                calls += 0 if errors else 1
            if refl is None:
                new_passages = [p for c, p in zip(top_ids, passages, strict=True) if c in new]
                refl = rule_reflect(question, new_passages, asked, converged=not new, relation=decomp.relation)
            prev_top = top_ids
            if refl.sufficient:
                break
            pending = [q for q in refl.sub_queries if q not in asked]
            for q in pending:  # a follow-up quoting a passage must find something other than that passage
                body = q.split(": ", 1)[-1][:80]
                sources[q] = {c for c, (_, text) in zip(top_ids, passages, strict=True) if body and body in text}
        return merged or Candidates(cfg), rounds, asked, calls
