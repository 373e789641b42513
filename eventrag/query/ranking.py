"""Evidence ranking: every candidate chunk collects scores from the channels that reached it.

score = w_sim·cosine(query, chunk) + w_lex·BM25 (min-max) + w_link·(question entity's own passage)
      + w_bridge·(passage of an entity that a top passage mentions) + w_event·(events reached in the graph)
      + w_ppr·(personalised PageRank mass from the question's entities and dense passages, best = 1)

The path kept for a chunk is the one of its strongest channel.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from eventrag.schema import RetrievalMode, RetrievedChunk
from eventrag.storage.base import GraphStore


@dataclass(frozen=True)
class RetrievalConfig:
    default_mode: RetrievalMode = "event"
    candidates: int = 30  # dense and BM25 candidates per query
    entity_seeds: int = 5
    entity_sim_min: float = 0.6
    event_seeds: int = 8
    bridge_parents: int = 10  # tuned (MuSiQue/2Wiki dev): 6 -> 10
    mention_chunks: int = 5  # a linked entity without its own passage seeds up to this many mentions
    mention_weight: float = 0.6
    bridge_mentions: int = 20  # a bridge entity named by at most this many passages brings them all (0: own passage only)
    lowercase_link_weight: float = 0.5  # a question span matched in lower case ("average") links this much weaker
    hops: int = 3  # event -CAUSES- event <-PARTICIPATES_IN- entity -> event is three hops
    expand_limit: int = 300
    hop_decay: float = 0.8
    relation_boost: float = 1.5
    relation_miss: float = 0.7
    max_rounds: int = 3
    followup_weight: float = 0.2  # HotpotQA-100: 0.5 -> 0.3 (R@5 .885 -> .905); MuSiQue dev with the bridge defaults: 0.3 -> 0.2 (R@5 .723 -> .777)
    w_sim: float = 1.0
    w_lex: float = 0.3
    w_link: float = 0.5
    w_bridge: float = 0.6  # tuned with bridge_mentions (MuSiQue dev R@5 .730 -> .810, 2Wiki dev .933 -> 1.0)
    w_event: float = 0.15
    # personalised PageRank (graph, event and agentic modes; 0 turns it off)
    w_ppr: float = 0.2
    ppr_passage_seeds: int = 10  # dense top passages that also seed the walk
    ppr_passage_weight: float = 0.05  # their total restart mass relative to the linked entities'
    ppr_top: int = 30  # passages the walk adds as candidates
    ppr_damping: float = 0.5  # probability of following an edge at each step (HippoRAG: 0.5)
    span_link_min: float = 0.0  # question spans linked to entities by name vector at >= this cosine (0: off)


@dataclass
class _Cand:
    sim: float | None = None
    lex: float = 0.0
    link: float = 0.0
    bridge: float = 0.0
    event: float = 0.0
    ppr: float = 0.0
    path: list[str] = field(default_factory=list)
    best: float = -1.0  # weighted contribution of the channel whose path is kept
    inferred_only: bool = True
    round: int = 1


class Candidates:
    def __init__(self, config: RetrievalConfig, round_no: int = 1) -> None:
        self.cfg = config
        self.round_no = round_no
        self.items: dict[str, _Cand] = {}
        self.extra: dict[str, float] = {}  # follow-up evidence (agentic rounds)

    def add(self, cid: str, *, sim: float | None = None, lex: float = 0.0, link: float = 0.0, bridge: float = 0.0,
            event: float = 0.0, ppr: float = 0.0, path: list[str] | None = None, inferred: bool = False) -> None:
        c = self.items.setdefault(cid, _Cand(round=self.round_no))
        if sim is not None:
            c.sim = sim if c.sim is None else max(c.sim, sim)
        c.lex, c.link = max(c.lex, lex), max(c.link, link)
        c.bridge, c.event, c.ppr = max(c.bridge, bridge), max(c.event, event), max(c.ppr, ppr)
        c.inferred_only &= inferred
        cfg = self.cfg
        # a graph channel's path (link/bridge/event/ppr) is kept over a plain seed path (dense/BM25)
        graph = max(cfg.w_link * link, cfg.w_bridge * bridge, cfg.w_event * event, cfg.w_ppr * ppr)
        contrib = 10.0 + graph if graph > 0 else max(cfg.w_sim * (sim or 0.0), cfg.w_lex * lex)
        if path and (contrib > c.best or not c.path):
            c.path, c.best = list(path), contrib
            if inferred:
                c.path.append("(via inferred edge)")

    def missing_sims(self) -> list[str]:
        return [cid for cid, c in self.items.items() if c.sim is None]

    def set_sims(self, sims: dict[str, float]) -> None:
        """Cosine similarities for the chunks that have none yet (0 for any the lookup did not find)."""
        for cid, c in self.items.items():
            if c.sim is None:
                c.sim = sims.get(cid, 0.0)

    def score(self, cid: str) -> float:
        c, cfg = self.items[cid], self.cfg
        return (cfg.w_sim * (c.sim or 0.0) + cfg.w_lex * c.lex + cfg.w_link * c.link + cfg.w_bridge * c.bridge
                + cfg.w_event * c.event + cfg.w_ppr * c.ppr + self.extra.get(cid, 0.0))

    def ranked(self) -> list[tuple[str, float]]:
        return sorted(((cid, self.score(cid)) for cid in self.items), key=lambda x: (-x[1], x[0]))

    def merge(self, other: Candidates, weight: float = 1.0, exclude: set[str] | None = None) -> None:
        """Add a follow-up query's evidence: each chunk keeps its score for the original question and gains
        `weight` x its best follow-up score. `exclude`: the passage a follow-up query was taken from (it
        trivially matches its own sentence, which is no new evidence)."""
        for cid, s in other.ranked():
            if exclude and cid in exclude:
                continue
            if cid not in self.items:
                oc = other.items[cid]
                self.items[cid] = _Cand(path=[*oc.path, "(follow-up query)"], round=oc.round)
            self.extra[cid] = max(self.extra.get(cid, 0.0), weight * s)

    def texts(self, ids: list[str], graph: GraphStore) -> list[tuple[str, str]]:
        nodes = {n.id: n for n in graph.get_nodes(ids)}
        return [(nodes[i].props.get("title", ""), nodes[i].props.get("text", "")) if i in nodes else ("", "")
                for i in ids]

    def top(self, k: int, graph: GraphStore, skip_docs: Collection[str] = ()) -> list[RetrievedChunk]:
        """The best `k` chunks still in the graph, leaving out chunks of the documents `skip_docs`
        (half-written by a crashed run)."""
        ranked = self.ranked()[: k * 2 + 8 if skip_docs else k]
        nodes = {n.id: n for n in graph.get_nodes([cid for cid, _ in ranked])}
        out: list[RetrievedChunk] = []
        for cid, s in ranked:
            n = nodes.get(cid)
            if n is None:  # deleted since the vectors were searched
                continue
            if len(out) >= k:
                break
            if skip_docs and (n.props.get("doc_id") or (n.doc_ids[0] if n.doc_ids else "")) in skip_docs:
                continue
            c = self.items[cid]
            out.append(RetrievedChunk(chunk_id=cid, doc_id=n.props.get("doc_id") or (n.doc_ids[0] if n.doc_ids else ""),
                                      title=n.props.get("title", ""), text=n.props.get("text", ""),
                                      score=round(float(s), 6), path=c.path, round=c.round))
        return out
