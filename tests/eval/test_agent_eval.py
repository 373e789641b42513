"""The agent inside both harnesses, on a real embedded EventRAG stack, with a scripted model (unit)."""

from __future__ import annotations

import pytest
from eval_scripted import ScriptedChat, agent_turns, batch_ids

from eval.agent_call import AgentCaller, run_eventfold_agent
from eval.deepresearch_bench.judge import RubricJudge
from eval.deepresearch_bench.loader import load_tasks
from eval.deepresearch_bench.runner import AgentReportWriter, run_drb
from eval.multihop.runner import run_multihop
from eval.multihop.systems import AgentSystem
from eventfold.settings import Settings

REPORT = "## Eastside tram\nThe council approved the line 7 to 2 [c:x]. It should cut commutes."


def _no_plain_calls(messages, schema):
    if schema and "sub_questions" in schema.get("properties", {}):  # the agent's plan: no sub-questions
        return {"sub_questions": []}
    if schema and "then" in schema.get("properties", {}):  # the bridge split: nothing described
        return {"first": "", "then": ""}
    raise AssertionError("unexpected non-tool call")


def test_multihop_agent_mode_fold_and_nofold(indexed, tmp_path):
    home, ds, stack, _ = indexed
    settings = Settings(home=home)
    for fold in (True, False):
        chat = ScriptedChat(
            _no_plain_calls, name="scripted-agent", tool_script=agent_turns("Northwind Robotics")
        )
        system = AgentSystem(AgentCaller(run_eventfold_agent, settings, stack.retriever, chat, fold=fold))
        summary = run_multihop(ds.select(2), system, tmp_path)
    runs = summary["runs"]
    assert set(runs) == {"model", "model-nofold"}
    for run in runs.values():
        assert run["n_errors"] == 0, run
        assert run["by_type"]["inference_query"]["em"] == 1.0
        assert run["overall"]["n_hits@10"] == 2 and run["overall"]["hits@10"] > 0
    import json

    rec = json.loads((tmp_path / "results.jsonl").read_text().splitlines()[0])
    # the model's two turns (search, answer), nothing run before its first one; the answer is its own
    stats = rec["stats"]
    assert stats["llm_calls"] == 2 and stats["tool_calls"] == 2 and stats["distinct_tools"] == 2
    assert stats["status"] == "answered" and stats["answer_source"] == "model" and stats["model_answer"] == 1
    assert stats["policy"] == "model" and stats["invalid_turns"] == 0
    header = (tmp_path / "table.md").read_text().splitlines()[2]
    assert all(
        col in header
        for col in ("| tool calls |", "| distinct tools |", "| answers by model |", "| unfolds |")
    )


def test_caller_passes_the_policy_and_memory_options_and_names_the_run():
    seen: list[dict] = []

    def fake_agent(prompt, settings, backend, chat_model, **kw):
        seen.append(kw)
        return {"answer": "a", "stats": {"tool_calls": 2}}

    callers = [
        AgentCaller(fake_agent, None, None, None, policy="workflow"),
        AgentCaller(fake_agent, None, None, None, fold=False),
        AgentCaller(fake_agent, None, None, None, unfold=False),
    ]
    assert [c.name for c in callers] == ["workflow", "model-nofold", "model-nounfold"]
    outs = [c("q") for c in callers]
    assert seen == [
        {"fold": True, "policy": "workflow"}, {"fold": False, "policy": "model"},
        {"fold": True, "policy": "model", "unfold": False},
    ]  # fmt: skip
    assert outs[0].answer == "a" and outs[0].stats == {"tool_calls": 2}


def test_drb_end_to_end_agent_writer_scripted_judge(indexed, tmp_path, fixtures_dir):
    home, _ds, stack, _ = indexed

    def script(messages, schema):
        if schema is None:  # the agent's long-form report call
            return REPORT
        if "sub_questions" in schema["properties"]:  # the agent's plan
            return {"sub_questions": []}
        if "then" in schema["properties"]:  # the bridge split: nothing described
            return {"first": "", "then": ""}
        if "findings" in schema["properties"]:  # a guard fold's summary
            return {"title": "tram vote", "findings": [], "open_questions": []}
        return {
            "results": [{"id": i, "score": 1 if i in (1, 3) else 0, "reason": "r"} for i in batch_ids(schema)]
        }

    chat = ScriptedChat(
        script, parse=True, tool_script=agent_turns("approved 7 to 2", query="Harbor City tram line")
    )
    tasks = load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])
    caller = AgentCaller(run_eventfold_agent, Settings(home=home), stack.retriever, chat, report_mode="long")
    summary = run_drb(tasks, AgentReportWriter(caller), RubricJudge(chat, batch_size=3), tmp_path)
    report = (tmp_path / "reports" / "1.md").read_text()
    assert "approved the line 7 to 2" in report
    judge_calls = [c for c in chat.calls if c["json_schema"] and "results" in c["json_schema"]["properties"]]
    assert [batch_ids(c["json_schema"]) for c in judge_calls] == [[1, 2, 3], [4]]
    assert "## Eastside tram" in judge_calls[0]["messages"][1].content  # the judge reads the report
    o = summary["overall"]
    assert o["info_recall"] == pytest.approx(0.5) and o["analysis"] == 1.0 and o["presentation"] == 0.0
    assert o["total"] == pytest.approx(0.5) and o["blocked_rate"] == 0.0


def test_agent_writer_shortens_long_prompts_and_drops_echoed_question(fixtures_dir):
    task = load_tasks(fixtures_dir / "drb2" / "tasks_and_rubrics.jsonl", idx=[1])[0]
    seen: list[str] = []

    def fake_agent(prompt, settings, backend, chat_model, fold=True, **kw):
        seen.append(prompt)
        return {"answer": "a", "report": f"# {' '.join(prompt.split())}\n\nBody.", "stats": {"steps": 1}}

    writer = AgentReportWriter(AgentCaller(fake_agent, None, None, None), max_prompt_chars=60)
    written = writer.write(task)
    assert seen[0].startswith(task.task[:40]) and len(seen[0]) <= 60
    assert written.report == "# Research report\n\nBody." and written.stats == {"steps": 1}
    assert AgentReportWriter(AgentCaller(fake_agent, None, None, None)).prompt_for(task) == task.prompt
