"""The capability tools over real rules-mode indexes of both sample corpora (examples/riverside/corpus and
examples/corpus, embedded graph store, the real embedder): timeline ranks each causal question's real
cause above an unrelated earlier event of the same document and above the effect told beside it; dates
computes order and differences; resolve names the described entity (a scripted pick here, the real
0.5B model in the slow test)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agent_doubles import ScriptedChatModel

from agent.policy.workflow import best_hit
from agent.state import RunState
from agent.tools import build_registry
from agent.tools.context import ToolContext
from eventfold.run_options import RunOptions
from eventfold.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
RIVERSIDE = ROOT / "examples" / "riverside"
SAMPLE = ROOT / "examples" / "corpus"
MODEL = Path.home() / ".cache" / "eventfold" / "models" / "qwen2.5-coder-0.5b.gguf"

# each causal question of examples/riverside: the subject a call names, words of its real cause, and the
# distractors: an unrelated earlier event told in the same document, and the subject's effect told beside it
CAUSAL = {
    "r1": ("Corrow Valley Water lower the water level of the Hollin Reservoir in August 2011", ["crack"],
           ["visitor centre"], ["regatta"]),
    "r2": ("the boil-water notice issued in Fennick in July 2013", ["membrane failure"], ["call centre"],
           ["primary schools", "bottled water"]),
    "r3": ("the July 2013 boil-water notice in Fennick", ["Ardent Filtration"], ["call centre"],
           ["primary schools", "bottled water"]),
    "r4": ("the nine-day closure of Sallow Road in February 2015", ["damage to the road", "burst"],
           ["smart meters"], ["buses", "primary school"]),
    "r5": ("Owen Pritchard resign as chief executive in March 2016", ["vote"], ["Business Award"],
           ["appoint Elena Marsh"]),
    "r6": ("the cancellation of the Hollin pumped-storage scheme in 2019", ["bat colony"], ["walking trail"],
           ["withdraw"]),
}  # fmt: skip


def _open(folder: Path, home: Path) -> Any:
    from eventrag.stack import open_stack

    stack = open_stack(Settings(home=home, index="t" + uuid.uuid4().hex[:8]), extract="rules")
    stack.indexer.index_paths([folder])
    return stack


@pytest.fixture(scope="module")
def riverside(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    stack = _open(RIVERSIDE / "corpus", tmp_path_factory.mktemp("riverside"))
    yield stack
    stack.close()


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    stack = _open(SAMPLE, tmp_path_factory.mktemp("sample"))
    yield stack
    stack.close()


def _call(stack: Any, name: str, model: Any = None, **args: Any) -> Any:
    ctx = ToolContext(run=RunState(question="q"), backend=stack.retriever, model=model or ScriptedChatModel([]),
                      options=RunOptions())
    result = build_registry(ctx).call(name, args)
    assert not result.error, result.content
    return result


def _first(events: list[dict[str, Any]], keys: list[str]) -> int:
    """The rank of the first event whose text holds one of `keys` (len(events) when none does)."""
    hits = [i for i, e in enumerate(events) if any(k.lower() in e["text"].lower() for k in keys)]
    return hits[0] if hits else len(events)


def cause_first(events: list[dict[str, Any]], qid: str, cause: list[str], earlier: list[str], effect: list[str]) -> int:
    """The rank of the real cause, asserted listed and above the unrelated earlier event and the effect."""
    found = _first(events, cause)
    assert found < len(events), (qid, [e["text"] for e in events])
    assert found < _first(events, earlier) and found < _first(events, effect), (qid, [e["text"] for e in events])
    return found


def _questions() -> dict[str, dict[str, Any]]:
    rows = [json.loads(line) for line in (RIVERSIDE / "questions.jsonl").read_text().splitlines() if line.strip()]
    return {r["id"]: r for r in rows}


def test_the_riverside_set_has_the_kinds_of_questions_it_promises():
    rows = list(_questions().values())
    kinds = [r["type"] for r in rows]
    assert len(rows) >= 12 and kinds.count("causal") >= 4 and kinds.count("temporal") >= 2
    assert kinds.count("bridge") >= 3 and kinds.count("comparison") >= 2
    assert any(len(r["supporting_docs"]) >= 2 for r in rows)
    docs = {p.name for p in (RIVERSIDE / "corpus").glob("*.md")}
    assert len(docs) >= 12 and all(set(r["supporting_docs"]) <= docs for r in rows)
    assert {r["id"] for r in rows if r["type"] == "causal"} == set(CAUSAL)


@pytest.mark.parametrize("qid", sorted(CAUSAL))
def test_timeline_ranks_the_cause_above_the_earlier_event_and_the_effect(riverside: Any, qid: str):
    subject, cause, earlier, effect = CAUSAL[qid]
    result = _call(riverside, "timeline", subject=subject, relation="causes")
    events = result.data["events"]
    found = cause_first(events, qid, cause, earlier, effect)
    assert events[found]["link"] in ("connective", "CAUSES") and events[found]["support"]
    # the cause's chunk is evidence the model can cite, and the line shows it
    assert events[found]["chunk_id"] in {ev.chunk_id for ev in result.evidence}
    assert f"[c:{events[found]['chunk_id']}]" in result.content


def test_timeline_ranks_the_demo_supplier_events_above_the_founding_and_the_recall_effects(sample: Any):
    result = _call(sample, "timeline", subject="the 2015 SeaGuard recall", relation="causes")
    events = result.data["events"]
    assert result.data["subject"]["date"] == "2015-01-09"
    cause = _first(events, ["fire broke out", "emergency supply contract"])
    assert cause < len(events), [e["text"] for e in events]
    assert cause < _first(events, ["registered Halvorsen Tidewater", "Tidemark 200"])  # unrelated, earlier
    assert cause < _first(events, ["NOK 38 million", "resigned as chief executive", "Vestkyst"])  # effects
    assert all(e["date"] is None or e["date"] < "2015-01-09" for e in events if e["score"] >= events[cause]["score"])


def test_timeline_follows_the_demo_chain_to_the_fire_through_the_contract_it_led_to(sample: Any):
    """recall <- emergency contract <- fire: nothing links the fire to the recall but the contract, told
    beside it; the fire comes a link deeper, named with the contract, above unrelated earlier events and effects."""
    result = _call(sample, "timeline", subject="the 2015 SeaGuard recall", relation="causes")
    events = result.data["events"]
    fire = _first(events, ["fire broke out"])
    assert fire < len(events), [e["text"] for e in events]
    assert events[fire]["depth"] >= 2 and "via: " in events[fire]["support"]
    via = events[fire]["support"].split("via: ", 1)[1]
    assert _first(events, [via[:60]]) < fire  # the intermediate is itself a listed cause
    assert fire < _first(events, ["registered Halvorsen Tidewater", "Tidemark 200", "five-year supply agreement"])
    assert fire < _first(events, ["NOK 38 million", "resigned as chief executive", "Vestkyst"])
    assert "fire broke out" in result.content and f"[c:{events[fire]['chunk_id']}]" in result.content


def test_timeline_before_lists_dated_events_in_time_order_before_the_subject(riverside: Any):
    result = _call(riverside, "timeline", subject="the boil-water notice in Fennick in July 2013", relation="before")
    dates = [e["date"] for e in result.data["events"]]
    assert dates and all(d < "2013-07-16" for d in dates)
    assert dates == sorted(dates, reverse=True)  # nearest the subject first


@pytest.mark.parametrize(
    ("first", "second", "op", "want"),
    [
        ("Corrow Valley Water was formed", "the ultraviolet plant at Brackley entered service", "difference",
         {"earlier": "first", "years": 8}),
        ("the crack in the Hollin spillway was found", "Corrow Valley Water began lowering the Hollin Reservoir",
         "difference", {"earlier": "first", "days": 7}),
        ("the opening of the Fennick customer call centre", "the administration of Ardent Filtration", "order",
         {"earlier": "second"}),
    ],
)  # fmt: skip
def test_dates_computes_order_and_difference_on_the_riverside_questions(
    riverside: Any, first: str, second: str, op: str, want: dict[str, Any]
):
    result = _call(riverside, "dates", first=first, second=second, op=op)
    assert {k: result.data[k] for k in want} == want, result.content
    for side in ("first", "second"):
        assert result.data[side]["chunk_id"] in {ev.chunk_id for ev in result.evidence}


def test_dates_on_the_sample_questions(sample: Any):
    q4 = _call(sample, "dates", first="Halvorsen Tidewater Instruments was founded",
               second="Brandt Meridian Group acquired Halvorsen Tidewater Instruments", op="difference")
    assert (q4.data["years"], q4.data["first"]["date"], q4.data["second"]["date"]) == (11, "2009-04-14", "2020-10-15")
    q5 = _call(sample, "dates", first="the launch of Marlow Oceanics' Tidemark 200",
               second="the fire at Kvarts Microsystems", op="order")
    assert q5.data["earlier"] == "first" and "first (the launch" in q5.content


def test_dates_says_so_when_a_date_is_missing(riverside: Any):
    result = _call(riverside, "dates", first="the coronation of the river king", second="Corrow Valley Water was formed")
    assert result.data["first"]["date"] is None and result.data["earlier"] is None
    assert "no date found" in result.content and "a date is missing" in result.content


def test_resolve_offers_only_names_the_evidence_writes_and_cites_the_sentence(riverside: Any):
    chat = ScriptedChatModel([], json_replies=[{"name": "Bernard Okoye"}, {"name": "Somebody Else"}])
    described = "the inspector who led the investigation into the Fennick boil-water notice"
    result = _call(riverside, "resolve", model=chat, description=described)
    enum = chat.calls[0]["json_schema"]["properties"]["name"]["enum"]
    assert "Bernard Okoye" in enum and enum[-1] == "none"
    assert result.data["name"] == "Bernard Okoye" and "Okoye" in result.data["sentence"]
    assert f"[c:{result.data['chunk_id']}]" in result.content and result.evidence[0].chunk_id == result.data["chunk_id"]
    refused = _call(riverside, "resolve", model=chat, description=described)  # a name outside the choices
    assert refused.data["name"] is None and "No name found" in refused.content


@pytest.mark.parametrize("description", [
    "Who led the investigation into the Fennick boil-water notice?",
    "the investigation into the Fennick boil-water notice was led by",  # every word of the run's question
    "Bernard Okoye",
    "Fennick, Corrow Valley",
])  # fmt: skip
def test_resolve_refuses_the_question_and_bare_names_before_asking_the_model(riverside: Any, description: str):
    """Resolved whole, a question comes back as the first entity its evidence names (often the hop before the
    answer), which a small model then gives as its answer; a bare name has nothing to resolve."""
    chat = ScriptedChatModel([], json_replies=[{"name": "Bernard Okoye"}])
    ctx = ToolContext(run=RunState(question="Who led the investigation into the Fennick boil-water notice?"),
                      backend=riverside.retriever, model=chat, options=RunOptions())
    result = build_registry(ctx).call("resolve", {"description": description})
    assert result.error and "call answer" in result.content and not chat.calls


def test_a_refused_resolve_offers_the_descriptions_inside_the_question_and_a_name_fills_the_next_question(
    riverside: Any,
):
    """The valid choices after a refusal are spans of the run's question; a resolved name put in place of
    its description is the next hop's question, as the tool result shows it."""
    question = "Which company employed the inspector who led the investigation into the Fennick boil-water notice?"
    described = "the inspector who led the investigation into the Fennick boil-water notice"
    chat = ScriptedChatModel([], json_replies=[{"name": "Bernard Okoye"}])
    registry = build_registry(ToolContext(run=RunState(question=question), backend=riverside.retriever,
                                          model=chat, options=RunOptions()))
    refused = registry.call("resolve", {"description": question})
    assert refused.error and f"{described!r}" in refused.content and not chat.calls
    result = registry.call("resolve", {"description": described})
    assert result.data["name"] == "Bernard Okoye"
    assert result.data["question_with_name"] == "Which company employed Bernard Okoye?"
    assert "the question with this name: Which company employed Bernard Okoye?" in result.content


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_resolve_with_the_real_small_model_names_the_described_entities(riverside: Any, sample: Any):
    if not MODEL.is_file():
        pytest.fail(f"{MODEL} missing: run `eventfold model pull qwen2.5-coder-0.5b`")
    from eventfold.llm.local_backend import LlamaCppChatModel

    model = LlamaCppChatModel(MODEL, n_ctx=4096)
    cases = [
        (riverside, "the inspector who led the investigation into the Fennick boil-water notice", "Bernard Okoye"),
        (riverside, "the chief executive who resigned on 31 March 2016", "Owen Pritchard"),
        (riverside, "the contractor that rebuilt the Hollin spillway wall", "Stanmore Civil Engineering"),
        (sample, "the inspector who signed the SeaGuard S2 recall order", "Dagny Solberg"),
    ]
    for stack, description, name in cases:
        result = _call(stack, "resolve", model=model, description=description)
        assert result.data["name"] == name, (description, result.content)


def test_search_shows_a_date_line_as_metadata_and_a_lookup_reads_the_hit_that_answers(riverside: Any):
    """The first chunk of the notice's document starts with its title and "Date: 2013-07-30": shown as
    the first words of the text, a small model answers that date. The lookup reads the hit whose body
    holds most of the question's words: the one that says when the notice was lifted."""
    question = "On what date was the Fennick boil-water notice lifted?"
    ctx = ToolContext(run=RunState(question=question), backend=riverside.retriever, model=ScriptedChatModel([]),
                      options=RunOptions())
    tools = build_registry(ctx)
    result = tools.call("search", {"query": question})
    ctx.run.evidence.update({ev.chunk_id: ev for ev in result.evidence})
    assert "Date:" not in result.content and '"Boil-Water Notice for Fennick" (published 2013-07-30):' in result.content
    evidence = {ev.chunk_id: ev for ev in result.evidence}
    best = best_hit(question, list(evidence), evidence)
    assert best is not None and "lifted on 26 July 2013" in evidence[best].text
    read = tools.call("read", {"id": best})
    assert read.content.splitlines()[0].startswith(f'[c:{best}] "Boil-Water Notice for Fennick"')
