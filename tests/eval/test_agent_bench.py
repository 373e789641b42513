"""bench/agent.py's table from recorded result rows (columns, per-type gap of the model policy to the
workflow policy) and its sets (discovered example folders, --set, supporting docs checked)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from eval.agent_table import category, render_by_type, render_table, summarize_run, type_gaps
from eval.local_sets import SetError, load_set, local_set, local_sets, parse_set

ROOT = Path(__file__).resolve().parents[2]


def load_bench():
    spec = importlib.util.spec_from_file_location("bench_agent", ROOT / "bench" / "agent.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def rec(run: str, qid: str, qtype: str, em: float, elapsed: float = 10.0, **stats: object) -> dict:
    return {"run": run, "qid": qid, "question_type": qtype, "metrics": {"em": em, "f1": em}, "stats": stats,
            "elapsed_s": elapsed}  # fmt: skip


def model_stats(calls: int, invalid: int = 0, by_model: int = 1, **more: int) -> dict[str, int]:
    return {"tool_calls": calls, "distinct_tools": min(calls, 3), "invalid_turns": invalid, "model_answer": by_model,
            "folds": 0, "guard_folds": 0, "unfolds": 0, "evaluated_prompt_tokens": 1000} | more  # fmt: skip


RECORDS = [
    rec("workflow", "a", "causal", 1.0, 4.0, **model_stats(3, by_model=0)),
    rec("workflow", "b", "causal", 1.0, 6.0, **model_stats(3, by_model=0)),
    rec("workflow", "c", "bridge", 0.0, 8.0, **model_stats(4, by_model=0)),
    rec("workflow", "d", "2hop", 1.0, 30.0, **model_stats(2, by_model=0)),
    rec(
        "model",
        "a",
        "causal",
        1.0,
        10.0,
        **model_stats(4, invalid=1, suggestions_shown=3, suggestions_followed=2),
    ),
    rec("model", "b", "causal", 0.0, 20.0, **model_stats(2, suggestions_shown=2, suggestions_followed=1)),
    rec("model", "c", "bridge", 1.0, 30.0, **model_stats(3, folds=1, unfolds=1)),
    rec("model", "d", "2hop", 0.0, 100.0, **model_stats(3, guard_folds=2)),
    rec("naive", "a", "causal", 0.0, 2.0, prompt_tokens=500),
    {"run": "naive", "qid": "b", "question_type": "causal", "error": "LLMError: down", "metrics": {}},
]


def test_types_from_the_sets_own_fields():
    assert [category(t) for t in ("causal", "Temporal", "bridge", "comparison")] == [
        "causal", "temporal", "bridge", "comparison",
    ]  # fmt: skip
    assert (
        category("3hop1") == "bridge" and category("inference_query") == "other" and category(None) == "other"
    )


def test_summary_counts_calls_answers_folds_and_times():
    s = summarize_run([r for r in RECORDS if r["run"] == "model"])
    assert s["n"] == 4 and s["em"] == 0.5 and s["tool_calls"] == 3.0 and s["model_answers"] == 1.0
    assert s["valid_calls"] == pytest.approx(12 / 13) and s["invalid_turns"] == 0.25
    assert (s["model_folds"], s["guard_folds"], s["unfolds"]) == (0.25, 0.5, 0.25)
    assert s["s_per_q"] == 40.0 and s["median_s"] == 25.0 and s["suggestions"] == (3, 5)
    naive = summarize_run([r for r in RECORDS if r["run"] == "naive"])
    assert naive["errors"] == 1 and naive["tool_calls"] is None and naive["valid_calls"] is None
    assert (
        naive["evaluated_tokens"] == 500
    )  # all prompt tokens where the backend does not count evaluated ones


def test_table_puts_the_systems_side_by_side_in_order():
    text = render_table(RECORDS, ["naive", "workflow", "model"])
    lines = text.splitlines()
    assert lines[0].startswith(
        "| system | n | errors | EM | F1 | tool calls/q | distinct tools/q | answers by model %"
    )
    assert [line.split(" | ")[0] for line in lines[2:]] == ["| naive", "| workflow", "| model"]
    assert (
        "| model | 4 | 0 | 0.500 | 0.500 | 3.00 | 2.75 | 100 | 92 | 0.25 | 0.25 | 0.50 | 0.25 | 1000 | 40.0 | 25.0 | 3/5 |"
        in text
    )
    assert "| naive | 1 | 1 | 0.000 | 0.000 | – | – | – | – |" in text


def test_gap_of_the_model_policy_to_the_workflow_policy_per_type():
    gaps = {g["type"]: g for g in type_gaps(RECORDS)}
    assert set(gaps) == {"causal", "bridge"}
    assert gaps["causal"]["gap_em"] == -50.0 and gaps["causal"]["n"] == 2
    assert gaps["bridge"]["gap_em"] == 0.0  # c right for the model, wrong for the workflow; d the other way
    text = render_by_type(RECORDS, ["workflow", "model"])
    assert "| workflow | 1.00 / 1.00 (2) | 0.50 / 0.50 (2) |" in text
    assert (
        "Gap model − workflow per type (points): causal EM -50, F1 -50 (n 2); bridge EM 0, F1 0 (n 2)" in text
    )


def test_no_gap_line_without_both_policies():
    assert "Gap" not in render_by_type([r for r in RECORDS if r["run"] != "workflow"])


def write_set(folder: Path, rows: list[dict]) -> None:
    (folder / "corpus").mkdir(parents=True)
    (folder / "corpus" / "01-fire.md").write_text("# The Kiln Fire\n\nA fire closed the kiln in 2011.\n")
    (folder / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_local_sets_are_discovered_and_read_with_titles(tmp_path):
    (tmp_path / "examples").mkdir()
    (tmp_path / "examples" / "questions.jsonl").write_text("")
    write_set(tmp_path / "examples" / "kilns", [
        {"id": "k1", "question": "What closed the kiln?", "answer": "A fire", "type": "causal", "supporting_docs": ["01-fire.md"]},
    ])  # fmt: skip
    sets = local_sets(tmp_path)
    assert sets["kilns"] == (
        tmp_path / "examples" / "kilns" / "corpus",
        tmp_path / "examples" / "kilns" / "questions.jsonl",
    )
    assert {"sample", "origin"} <= set(sets)
    ds = local_set("kilns", *sets["kilns"])
    assert ds.examples[0].gold_titles == ["The Kiln Fire"] and ds.passages[0].title == "The Kiln Fire"
    assert ds.examples[0].question_type == "causal"


def test_bad_sets_fail_with_a_clear_error(tmp_path):
    write_set(
        tmp_path / "s", [{"id": "x", "question": "q", "answer": "a", "supporting_docs": ["02-missing.md"]}]
    )
    with pytest.raises(SetError, match=r"supporting docs \['02-missing.md'\] are not in the corpus"):
        local_set("s", tmp_path / "s" / "corpus", tmp_path / "s" / "questions.jsonl")
    with pytest.raises(SetError, match="no .md or .txt documents"):
        local_set("s", tmp_path / "nowhere", tmp_path / "s" / "questions.jsonl")
    with pytest.raises(SetError, match="expected name=corpus_dir,questions_file"):
        parse_set("only-a-name")
    assert parse_set("mine=/c,/q.jsonl") == ("mine", (Path("/c"), Path("/q.jsonl")))
    with pytest.raises(SetError, match="unknown set 'nope'"):
        load_set("nope", tmp_path, tmp_path, {})


def test_all_sets_and_systems_on_the_command_line():
    bench = load_bench()
    names = bench.set_names("all", {"mine": (Path("/c"), Path("/q"))})
    assert names[0] == "sample" and "origin" not in names and names[-3:] == ["mine", "hotpotqa", "musique"]
    assert bench.set_names("sample, musique", {}) == ["sample", "musique"]
    args = bench.parse_args(["--systems", "workflow,model", "--set", "mine=/c,/q"])
    assert args.systems == ["workflow", "model"] and args.extra_sets == {"mine": (Path("/c"), Path("/q"))}
    assert args.data_dir == ROOT / "data"
    with pytest.raises(SystemExit):
        bench.parse_args(["--systems", "agent"])
    assert not args.no_trace and bench.parse_args(["--no-trace"]).no_trace


def test_the_model_policys_runs_record_the_workflows_call_unless_no_trace():
    bench = load_bench()
    kwargs = {name: (bench.make_system(name, None, None, None).caller.run_kwargs,
                     bench.make_system(name, None, None, None, trace=False).caller.run_kwargs)
              for name in ("workflow", "model", "model-nofold")}  # fmt: skip
    assert kwargs["model"] == ({"trace_workflow": True}, {"trace_workflow": False})
    assert kwargs["model-nofold"][0] == {"trace_workflow": True}
    assert kwargs["workflow"] == ({"trace_workflow": False}, {"trace_workflow": False})


def test_the_shipped_sample_set_reads():
    ds = load_set("sample", ROOT, ROOT / "data", {})
    assert len(ds.examples) >= 8 and all(ex.gold_titles for ex in ds.examples)
    assert all(set(ex.gold_passage_ids) <= {p.passage_id for p in ds.passages} for ex in ds.examples)


def test_rows_of_a_retrained_model_in_the_same_folder_are_not_resumed(tmp_path) -> None:
    """A model retrained into the same folder keeps its name; the rows `--out` already holds were
    answered by the old weights, so the benchmark refuses to resume them instead of mixing the two."""
    import os
    import types

    from eventfold.settings import Settings

    bench = load_bench()
    model_dir = tmp_path / "final"
    model_dir.mkdir()
    (model_dir / "model.safetensors").write_bytes(b"old")
    settings = Settings(home=tmp_path / "home", llm={"backend": "transformers", "hf_model_dir": model_dir})
    chat = types.SimpleNamespace(name="hf:final")
    out = tmp_path / "out"
    out.mkdir()
    bench.claim_out(out, bench.model_identity(settings, chat))
    bench.claim_out(out, bench.model_identity(settings, chat))  # the same model resumes
    (model_dir / "model.safetensors").write_bytes(b"new weights")
    os.utime(model_dir / "model.safetensors", ns=(1, 1))
    with pytest.raises(SystemExit, match="another model"):
        bench.claim_out(out, bench.model_identity(settings, chat))
    again = tmp_path / "again"
    again.mkdir()
    bench.claim_out(again, bench.model_identity(settings, chat))
    other = settings.model_copy(update={"run": settings.run.model_copy(update={"max_steps": 3})})
    with pytest.raises(SystemExit, match="other run options"):  # the same files, other prompts
        bench.claim_out(again, bench.model_identity(other, chat))
