"""Both harnesses with the real local model (Qwen2.5-Coder-0.5B GGUF, llama.cpp) as reader, agent,
report writer and judge, on a real embedded stack. Budgets are tiny to keep this under a minute."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from eval.agent_call import AgentCaller, run_eventfold_agent
from eval.deepresearch_bench.judge import RubricJudge
from eval.deepresearch_bench.loader import load_tasks
from eval.deepresearch_bench.runner import AgentReportWriter, run_drb
from eval.multihop.runner import run_multihop
from eval.multihop.systems import RetrieveAndRead
from eventfold.run_options import RunOptions
from eventfold.settings import LLMSettings, Settings, default_home

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def local_chat(indexed):
    gguf = Path(os.environ.get("EVENTFOLD_TEST_GGUF", default_home() / "models" / "qwen2.5-coder-0.5b.gguf"))
    if not gguf.is_file():
        if os.environ.get("CI"):
            pytest.fail(f"local model {gguf} missing (run `eventfold model pull qwen2.5-coder-0.5b`)")
        pytest.skip(f"local model {gguf} not on this machine")
    from eventfold.llm.factory import make_chat_model

    home = indexed[0]
    settings = Settings(
        home=home,
        llm=LLMSettings(model_path=gguf, n_ctx=4096, max_tokens=128),
        run=RunOptions(max_steps=2, context_budget=3000, answer_max_tokens=24, report_max_tokens=96),
    )
    return settings, make_chat_model(settings, cache=False)


def test_drb_one_task_local_writer_and_judge(indexed, local_chat, fixtures_dir, tmp_path):
    settings, chat = local_chat
    stack = indexed[2]
    tasks = load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])
    writer = AgentReportWriter(
        AgentCaller(run_eventfold_agent, settings, stack.retriever, chat, report_mode="long")
    )
    summary = run_drb(tasks, writer, RubricJudge(chat, with_reason=False, max_retries=1), tmp_path)
    report = (tmp_path / "reports" / "1.md").read_text()
    assert report.startswith("# ") and "## Sources" in report
    rec = json.loads((tmp_path / "judgments.jsonl").read_text().splitlines()[-1])
    assert rec["judge"] == chat.name and len(rec["items"]) == 4
    assert all(it["score"] in (1, 0, -1, None) for it in rec["items"])
    overall = summary["overall"]
    assert overall["n_tasks"] == (1 if overall["unjudged"] < 4 else 0)
    assert overall["total"] is None or 0.0 <= overall["total"] <= 1.0
    assert (tmp_path / "table.md").is_file()


def test_multihop_naive_local_reader(indexed, local_chat, tmp_path):
    settings, chat = local_chat
    ds, stack = indexed[1], indexed[2]
    summary = run_multihop(ds.select(2), RetrieveAndRead(stack.retriever, "naive", chat, read_k=2), tmp_path)
    run = summary["runs"]["naive"]
    assert run["n"] == 2 and run["n_errors"] == 0
    answers = [json.loads(line)["answer"] for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert all(isinstance(a, str) and a for a in answers)
    assert 0.0 <= run["overall"]["acc"] <= 1.0
