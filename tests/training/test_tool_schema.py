"""One tool schema: the specs the agent sends at inference, the ones SFT rows carry and the ones the RL
trainer renders into the policy's prompt are the same objects, all from the agent's registry."""

from __future__ import annotations

import inspect
import json

from test_sft_data import GOOD, ScriptedTeacher
from transformers.utils import get_json_schema

from agent.graph import AgentDeps, AgentGraph
from agent.state import RunState
from eventfold.llm.transformers_backend import HFChatModel
from training.common.loading import load_model_and_tokenizer
from training.config import RLRunConfig
from training.rl.env import EnvConfig, ResearchEnv
from training.rl.run import build_rl_trainer, rl_rows
from training.sft.data import TrainingQuestion, agent_run_fn, generate_trajectories, trajectory_rows


def inference_specs(env_cfg: EnvConfig, counter, backend) -> list[dict]:
    """What the agent's `agent` node offers the model for a run with the environment's options."""
    from training.rl.env import _run_options

    graph = AgentGraph(AgentDeps(model=counter, backend=backend), _run_options(env_cfg))
    return [s.to_openai() for s in graph.tool_specs(RunState(run_id="x", question="q"))]


def test_sft_rows_carry_the_inference_specs(counter, lexical_backend) -> None:
    from training.rl.env import _run_options

    cfg = EnvConfig(run={"context_budget": 8000, "max_steps": 6})
    q = TrainingQuestion(id="q", question="Who led the repairs on the road that was closed?", golds=["Mara Quill"])
    traj = generate_trajectories(
        [q], agent_run_fn(lexical_backend, _run_options(cfg)), ScriptedTeacher(counter, GOOD)
    )[0]
    want = inference_specs(cfg, counter, lexical_backend)
    rows = trajectory_rows(traj)
    assert rows and all(json.loads(r["tools"]) == want for r in rows)
    assert [t["function"]["name"] for t in want] == ["search", "read", "timeline", "dates", "resolve", "fold", "unfold", "answer"]


def test_env_methods_are_generated_from_the_registry(counter, lexical_backend) -> None:
    env = ResearchEnv(lexical_backend, counter, EnvConfig())
    want = inference_specs(EnvConfig(), counter, lexical_backend)
    public = sorted(
        n for n, _ in inspect.getmembers(ResearchEnv, predicate=inspect.isfunction) if not n.startswith("_")
    )
    assert public == sorted(["reset", *(t["function"]["name"] for t in want)])
    for spec in want:
        got = get_json_schema(getattr(env, spec["function"]["name"]))["function"]
        params = spec["function"]["parameters"]
        assert got["description"] == spec["function"]["description"]
        assert set(got["parameters"]["properties"]) == set(params["properties"])
        assert set(got["parameters"].get("required", [])) == set(params.get("required", []))
        for name, prop in params["properties"].items():
            assert got["parameters"]["properties"][name]["description"] == prop.get("description", name)
    # a generated tool runs the registry's tool (argument validation included)
    env.reset(question="Who led the repairs?", answer="Mara Quill")
    assert "bad arguments for unfold" in env.unfold()
    env.search(query="repairs Riverside Road")
    assert env.fold(target="all").startswith("Folded steps 1-")


def test_rl_trainer_renders_the_inference_specs(tmp_path, tiny_model_dir, tiny_questions, lexical_backend) -> None:
    cfg = RLRunConfig.model_validate({
        "model": {"path": str(tiny_model_dir)}, "output_dir": str(tmp_path / "rl"),
        "questions": {"path": str(tmp_path)}, "env": {"run": {"context_budget": 4000, "max_steps": 4}},
        "grpo": {"num_generations": 2, "per_device_train_batch_size": 2, "max_steps": 1,
                 "max_completion_length": 64, "max_tool_calling_iterations": 2},
        "advantage": {"method": "grpo"},
    })  # fmt: skip
    qs = [TrainingQuestion(id=q["id"], question=q["question"], golds=[q["answer"]]) for q in tiny_questions]
    model, tok = load_model_and_tokenizer(tiny_model_dir)
    trainer = build_rl_trainer(cfg, qs, lexical_backend, model=model, tokenizer=tok)
    counter = HFChatModel(tok)
    want = inference_specs(cfg.env, counter, lexical_backend)
    assert list(trainer._env_tools.values()) == [want]
    # the prompt TRL tokenizes is the prompt the agent renders at inference (same tools, same order)
    row = rl_rows(qs[:1], cfg.env.run.context_budget)[0]
    rl_text = tok.apply_chat_template(row["prompt"], tools=trainer._env_tools[None], tokenize=False,
                                      add_generation_prompt=True)
    from eventfold.llm.types import Message, ToolSpec

    msgs = [Message(role=m["role"], content=m["content"]) for m in row["prompt"]]
    specs = [ToolSpec(**t["function"]) for t in want]
    assert rl_text == counter.render(msgs, specs)
