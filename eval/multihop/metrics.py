"""Multi-hop QA metrics, per question; `aggregate` averages them overall and per question type.

Retrieval (MultiHopRAG, `retrieval_evaluate.py` of yixuantt/MultiHop-RAG, replicated exactly):
spaces and newlines are removed from gold facts and retrieved texts; a retrieved item *hits* when any
gold fact is a substring of it. Over the first 10 items: Hits@10 / Hits@4 = a hit within rank 10 / 4;
MRR@10 = 1 / rank of the first hit; MAP@10 = sum over hitting ranks r of (number of gold facts first
found at r) / r, divided by min(#gold facts, 10). Null queries are skipped (the caller passes None).

Answers: EM and F1 with SQuAD normalisation (max over gold aliases); MultiHopRAG accuracy
(`qa_evaluate.py`): the answer inside 'The answer to the question is "…"' when present, lower-cased,
is correct when it shares at least one whitespace token with the lower-cased gold answer.
Recall@k (HotpotQA, MuSiQue, 2Wiki): share of gold titles among the first k distinct retrieved titles.
"""

from __future__ import annotations

import re
import string
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence

RECALL_KS = (2, 5, 10)
RETRIEVAL_KEYS = ("hits@4", "hits@10", "map@10", "mrr@10")

# --- retrieval, MultiHopRAG -------------------------------------------------------------------


def _squash(text: str) -> str:
    return text.replace(" ", "").replace("\n", "")


def multihoprag_retrieval(retrieved: Sequence[str], gold_facts: Sequence[str]) -> dict[str, float]:
    """Hits@4, Hits@10, MAP@10, MRR@10 for one (non-null) query, as the official script computes them."""
    if not gold_facts:
        raise ValueError(
            "MultiHopRAG retrieval metrics need at least one gold fact (null queries are skipped)"
        )
    gold = [_squash(g) for g in gold_facts]
    items = [_squash(r) for r in retrieved]
    hits4 = hits10 = False
    ap_sum = 0.0
    first: int | None = None
    found: list[str] = []
    for rank, item in enumerate(items[:10], start=1):
        if not any(g in item for g in gold):
            continue
        hits10 = True
        hits4 = hits4 or rank <= 4
        if first is None:
            first = rank
        new = 0
        for g in gold:
            if g in item and g not in found:
                new += 1
                found.append(g)
        ap_sum += new / rank
    return {
        "hits@4": float(hits4),
        "hits@10": float(hits10),
        "map@10": ap_sum / min(len(gold), 10),
        "mrr@10": 1.0 / first if first else 0.0,
    }


def recall_at_k(
    retrieved_titles: Sequence[str], gold_titles: Sequence[str], ks: Iterable[int] = RECALL_KS
) -> dict[str, float]:
    """Share of gold titles among the first k distinct retrieved titles, for each k."""
    gold = set(gold_titles)
    if not gold:
        raise ValueError("Recall@k needs at least one gold title")
    distinct = list(dict.fromkeys(retrieved_titles))
    return {f"recall@{k}": len(gold.intersection(distinct[:k])) / len(gold) for k in ks}


# --- answers ----------------------------------------------------------------------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)
_PUNCT = set(string.punctuation)
_ANSWER_PATTERN = re.compile(r'The answer to the question is "(.*?)"')


def normalize_answer(text: str) -> str:
    """SQuAD v1.1 normalisation: lower case, drop punctuation and articles, collapse whitespace."""
    text = text.lower()
    text = "".join(ch for ch in text if ch not in _PUNCT)
    text = _ARTICLES.sub(" ", text)
    return " ".join(text.split())


def mentions_answer(text: str, golds: Sequence[str]) -> bool:
    """Whether `text` holds a gold answer as whole words, both normalised (empty golds never match)."""
    hay = f" {normalize_answer(text)} "
    return any(f" {normalize_answer(g)} " in hay for g in golds if normalize_answer(g))


def exact_match(prediction: str, golds: Sequence[str]) -> float:
    return float(any(normalize_answer(prediction) == normalize_answer(g) for g in golds))


def _f1(prediction: str, gold: str) -> float:
    pred_tokens = normalize_answer(prediction).split()
    gold_tokens = normalize_answer(gold).split()
    common = Counter(pred_tokens) & Counter(gold_tokens)
    same = sum(common.values())
    if same == 0:
        return 0.0
    precision = same / len(pred_tokens)
    recall = same / len(gold_tokens)
    return 2 * precision * recall / (precision + recall)


def f1_score(prediction: str, golds: Sequence[str]) -> float:
    return max((_f1(prediction, g) for g in golds), default=0.0)


def extract_multihoprag_answer(text: str) -> str:
    if "The answer" in text:
        match = _ANSWER_PATTERN.search(text)
        if match:
            return match.group(1)
    return text


def multihoprag_accuracy(prediction: str, gold: str) -> float:
    """1.0 when the (extracted, lower-cased) prediction shares a whitespace token with the gold answer."""
    pred = extract_multihoprag_answer(prediction).lower().split()
    return float(bool(set(pred).intersection(gold.lower().split())))


def answer_metrics(prediction: str, golds: Sequence[str]) -> dict[str, float]:
    if not golds:
        raise ValueError("answer metrics need at least one gold answer")
    return {
        "em": exact_match(prediction, golds),
        "f1": f1_score(prediction, golds),
        "acc": multihoprag_accuracy(prediction, golds[0]),
    }


# --- aggregation ------------------------------------------------------------------------------


def _mean_by_key(rows: Iterable[Mapping[str, float | None]]) -> dict[str, float]:
    sums: dict[str, float] = defaultdict(float)
    counts: dict[str, int] = defaultdict(int)
    for row in rows:
        for key, value in row.items():
            if value is not None:
                sums[key] += float(value)
                counts[key] += 1
    return {k: sums[k] / counts[k] for k in sums} | {f"n_{k}": counts[k] for k in sums}


def aggregate(records: Sequence[Mapping[str, object]]) -> dict[str, object]:
    """Mean of each metric over the records that define it, overall and per `question_type`.

    A record is {"question_type": str, "metrics": {name: value or None}}; `n_<metric>` says how many
    questions each mean is over (null queries do not count for retrieval metrics)."""
    overall = _mean_by_key(r["metrics"] for r in records)  # type: ignore[misc]
    by_type: dict[str, list[Mapping[str, float | None]]] = defaultdict(list)
    for r in records:
        by_type[str(r.get("question_type", "unknown"))].append(r["metrics"])  # type: ignore[arg-type]
    return {
        "n": len(records),
        "overall": overall,
        "by_type": {t: {"n": len(rows), **_mean_by_key(rows)} for t, rows in sorted(by_type.items())},
    }
