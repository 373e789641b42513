"""Retriever: naive / graph / event / agentic retrieval over the event graph (implements SearchBackend).

- naive: dense search over chunks.
- graph: seeds = dense + BM25 chunks and the entities named in the question (lexicon + entity vectors);
  the entity neighbourhood adds each linked entity's own passage and, one hop further, the passages of
  the entities that the best passages mention (bridges).
- event: graph + event seeds (event vectors, events of linked entities), k-hop expansion in the graph
  store along temporal/causal/participation edges under the question's time filter; a chunk gains the
  score of the events it states. Inferred edges may bring a chunk in but never add evidence score.
- agentic: decomposition (one structured LLM call, or rules), event retrieval per sub-query, then a
  reflection step that judges sufficiency and issues new sub-queries, for up to `max_rounds` rounds.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

import numpy as np

from eventfold.llm.types import ChatModel
from eventrag.embed import Embedder
from eventrag.graph_io import node_to_chunk
from eventrag.query.decompose import Decomposition, llm_decompose, llm_reflect, rule_decompose, rule_reflect
from eventrag.query.lexical import LexicalCache, minmax
from eventrag.query.ranking import Candidates, RetrievalConfig
from eventrag.schema import Chunk, RetrievalMode, RetrievalResult
from eventrag.storage.base import GraphStore, VectorStore

EVENT_EDGES = ("BEFORE", "AFTER", "CAUSES", "ENABLES", "RELATED_TO", "PART_OF", "PARTICIPATES_IN")


class Retriever:
    def __init__(self, graph: GraphStore, vectors: VectorStore, embedder: Embedder, collections: dict[str, str],
                 *, chat_model: ChatModel | None = None, config: RetrievalConfig | None = None,
                 lexical: LexicalCache | None = None) -> None:
        self.graph, self.vectors, self.embedder = graph, vectors, embedder
        self.collections = collections
        self.chat_model = chat_model
        self.config = config or RetrievalConfig()
        self.lexical = lexical or LexicalCache(graph)

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
            chunks = cands.top(top_k, self.graph, skip_docs=half_written | self.lexical.get().pending_docs)
        return RetrievalResult(query=query, mode=mode, chunks=chunks, rounds=rounds, sub_queries=subs,
                               llm_calls=calls, llm_errors=llm_errors, elapsed_s=round(time.perf_counter() - t0, 4))

    # --- building blocks ----------------------------------------------------------------------
    def _pending_docs(self, doc_ids: set[str]) -> set[str]:
        if not doc_ids:
            return set()
        return {n.id for n in self.graph.get_nodes(sorted(doc_ids))
                if n.label == "Document" and n.props.get("status") == "pending"}

    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(self.embedder.embed([text]), dtype=np.float32)

    def _search(self, kind: str, qvec: np.ndarray, k: int) -> list[tuple[str, float]]:
        hits = self.vectors.search(self.collections[kind], qvec, top_k=k)
        return [(h.id, float(h.score)) for h in hits[0]] if hits else []

    def _naive(self, query: str, top_k: int) -> Candidates:
        cands = Candidates(self.config)
        for cid, sim in self._search("chunks", self._embed(query), top_k):
            cands.add(cid, sim=sim, path=["dense:chunk"])
        return cands

    def _one_query(self, query: str, decomp: Decomposition, mode: str, top_k: int, round_no: int = 1,
                   qvec: np.ndarray | None = None) -> Candidates:
        cfg = self.config
        lex = self.lexical.get()
        qvec = self._embed(query) if qvec is None else qvec
        cands = Candidates(cfg, round_no=round_no)
        k = max(cfg.candidates, top_k)
        for cid, sim in self._search("chunks", qvec, k):
            cands.add(cid, sim=sim, path=["dense:chunk"])
        for cid, s in minmax(dict(lex.search(query, k))).items():
            cands.add(cid, lex=s, path=["bm25:chunk"])
        # entity seeds: names in the question (lexicon), names the decomposition gave, nearest entity vectors
        links = {lnk.entity_id: (lnk.name, min(1.0, 0.5 + 0.15 * lnk.specificity)) for lnk in lex.link(query)}
        for name in decomp.entities:
            for lnk in lex.link(name, limit=1):
                links.setdefault(lnk.entity_id, (lnk.name, 0.8))
        for eid, sim in self._search("entities", qvec, cfg.entity_seeds):
            if sim >= cfg.entity_sim_min and eid in lex.topical:
                links.setdefault(eid, (lex.display.get(eid, eid), sim * 0.8))
        topic, mentions = self._entity_chunks(list(links))
        for eid, (name, conf) in links.items():
            # the entity's own passage; for an entity that has none, the passages that mention it
            own = topic.get(eid) or mentions.get(eid, [])[: cfg.mention_chunks]
            weight = 1.0 if eid in topic else cfg.mention_weight
            for cid in own:
                cands.add(cid, link=conf * weight, path=[f"seed:entity:{name}", f"MENTIONED_IN>chunk:{cid}"])
        # bridges: entities mentioned in the best passages -> their own passages
        cands.fill_sims(self.vectors, self.collections["chunks"], qvec)
        parents = cands.ranked()[: cfg.bridge_parents]
        mentioned = self.graph.get_edges([p for p, _ in parents], edge_types=["MENTIONED_IN"])
        parent_score = dict(parents)
        ents_of: dict[str, list[str]] = {}
        for e in mentioned:
            if e.dst in parent_score and e.src not in links:
                ents_of.setdefault(e.src, []).append(e.dst)
        bridge_topic, _ = self._entity_chunks(list(ents_of))
        top_parent = max(parent_score.values(), default=1.0) or 1.0
        for eid, pids in ents_of.items():
            best = max(pids, key=lambda p: parent_score[p])
            for cid in bridge_topic.get(eid, []):
                if cid == best:
                    continue
                cands.add(cid, bridge=parent_score[best] / top_parent, path=[
                    f"seed:chunk:{best}", f"<MENTIONED_IN entity:{lex.display.get(eid, eid)}", f"MENTIONED_IN>chunk:{cid}"])
        if mode == "event":
            self._event_expand(qvec, decomp, links, cands)
        cands.fill_sims(self.vectors, self.collections["chunks"], qvec)
        return cands

    def _entity_chunks(self, entity_ids: Sequence[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
        """(entity id -> chunks whose subject (document title) it is, entity id -> other chunks mentioning it)."""
        topic: dict[str, list[str]] = {}
        other: dict[str, list[str]] = {}
        if not entity_ids:
            return topic, other
        wanted = set(entity_ids)
        for e in self.graph.get_edges(list(entity_ids), edge_types=["MENTIONED_IN"]):
            if e.src in wanted:
                (topic if e.props.get("topic") else other).setdefault(e.src, []).append(e.dst)
        return topic, other

    def _event_expand(self, qvec: np.ndarray, decomp: Decomposition, links: dict[str, tuple[str, float]],
                      cands: Candidates) -> None:
        cfg = self.config
        seeds = dict(self._search("events", qvec, cfg.event_seeds))
        if links:  # events the linked entities take part in
            for e in self.graph.get_edges(list(links), edge_types=["PARTICIPATES_IN"])[: cfg.event_seeds * 4]:
                if e.src in links:
                    seeds.setdefault(e.dst, 0.5 * links[e.src][1])
        if not seeds:
            return
        exp = self.graph.expand(list(seeds), hops=cfg.hops, edge_types=list(EVENT_EDGES), direction="both",
                                time_from=decomp.time_from, time_to=decomp.time_to, limit=cfg.expand_limit)
        inferred = {e.key for e in exp.edges if e.inferred}
        for xn in exp.nodes:
            n = xn.node
            if n.label != "Event":
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
            for cid in n.props.get("chunk_ids") or []:
                # an inferred edge may bring a chunk in, but adds no evidence score of its own
                cands.add(cid, event=0.0 if via_inferred else score, path=[*path, f"MENTIONED_IN>chunk:{cid}"],
                          inferred=via_inferred)

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
        rounds = 0
        prev_top: list[str] = []
        sources: dict[str, set[str]] = {}
        while pending and rounds < cfg.max_rounds:
            rounds += 1
            for q in pending:
                asked.append(q)
                found = self._one_query(q, decomp, "event", top_k, round_no=rounds,
                                        qvec=qvec if q == question else None)
                if merged is None:
                    merged = found
                else:
                    merged.merge(found, weight=cfg.followup_weight, exclude=sources.get(q))
            assert merged is not None
            merged.fill_sims(self.vectors, self.collections["chunks"], qvec)  # newcomers vs the question
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
