"""The RL research environment: real agent tools, context accounting on the rendered context, rewards."""

from __future__ import annotations

import pytest

from eventfold.llm.transformers_backend import HFChatModel
from training.common.loading import load_tokenizer
from training.rl.env import EnvConfig, EnvError, ResearchEnv, research_reward
from training.rl.rewards import RewardConfig


@pytest.fixture
def env(lexical_backend, tiny_model_dir) -> ResearchEnv:
    counter = HFChatModel(load_tokenizer(tiny_model_dir))
    cfg = EnvConfig(
        run={"context_budget": 2000, "max_steps": 6}, reward=RewardConfig(context_budget=2000, cost_per_1k=1.0)
    )
    return ResearchEnv(lexical_backend, counter, cfg)


def test_scripted_episode_with_fold_scores_and_shrinks_context(env, tiny_questions) -> None:
    q = tiny_questions[1]  # who led the repairs ... -> Mara Quill
    assert env.reset(**q).strip().startswith("[status] step 1 of 6 · context")  # appended to the prompt by TRL
    out = env.search(query="Riverside Road closed pumping station")
    assert "[c:02-closure#0]" in out
    assert "Mara Quill" in env.read(id="03-repairs#0")
    before = env.run_state.counters.final_context_tokens
    out = env.fold(start_step=1, end_step=2)
    assert out.startswith("Folded steps 1-2 into F1") and "\n[status] step 4 of 6 · context " in out
    after = env.run_state.counters.final_context_tokens
    assert after < before  # the rendered context shrank
    assert env.answer(answer="Mara Quill").startswith("Answer recorded")
    run = env.run_state
    assert run.status == "answered" and run.counters.folds == 1 and len(run.steps) == 4
    r = env._reward()
    assert r.em == 1.0 and r.format > 0
    assert run.counters.peak_context_tokens == max(run.counters.context_samples) == before
    assert before > 2000 and r.context_cost == pytest.approx(min(0.5, (before - 2000) / 1000.0))
    assert r.total == pytest.approx(1.0 - r.context_cost + 0.1)
    # unfold restores the verbatim steps: the context is back to its pre-fold size plus the new steps
    env.reset(**q)
    env.search(query="Riverside Road closed")
    env.search(query="repairs led by")
    size = env.run_state.counters.final_context_tokens
    env.fold(start_step=1, end_step=2)
    env.unfold(fold_id="F1")
    assert env.run_state.counters.unfolds == 1
    assert env.run_state.counters.final_context_tokens > size


def test_bad_calls_are_tool_errors_and_cost_format(env, tiny_questions) -> None:
    env.reset(**tiny_questions[0])
    assert env.fold(start_step=3, end_step=5).startswith("error:")
    assert env.unfold(fold_id="F9").startswith("error:")
    r = env._reward()
    assert r.correctness == 0.0 and r.format == pytest.approx(-0.3)  # 2 invalid (-0.2) + no answer (-0.1)
    env.answer(answer="no")  # wrong, and a yes/no answer needs no citation
    assert env.search(query="more").startswith("error: the episode has ended")


def test_step_cap_ends_episode(lexical_backend, tiny_model_dir, tiny_questions) -> None:
    env = ResearchEnv(lexical_backend, HFChatModel(load_tokenizer(tiny_model_dir)), EnvConfig(run={"max_steps": 2}))
    env.reset(**tiny_questions[0])
    env.search(query="storm")
    env.search(query="closure")
    assert "step cap" in env.search(query="again")
    assert env._outcome().answer is None


def test_reset_needs_a_question_and_tools_need_reset(env) -> None:
    with pytest.raises(EnvError, match="reset"):
        env.search(query="x")
    with pytest.raises(EnvError, match="question"):
        env.reset(answer="x")


def test_research_reward_logs_episode_metrics(lexical_backend, tiny_model_dir, tiny_questions) -> None:
    counter = HFChatModel(load_tokenizer(tiny_model_dir))
    envs = [ResearchEnv(lexical_backend, counter) for _ in range(2)]
    for e in envs:
        e.reset(**tiny_questions[0])
    envs[0].search(query="storm")
    envs[0].answer(answer="10 January 2020")  # cites the seen chunk that holds it
    logged: dict[str, float] = {}
    rewards = research_reward(environments=envs, log_metric=lambda k, v: logged.__setitem__(k, v))
    assert rewards[0] > rewards[1]
    assert logged["episode/em"] == 0.5 and logged["episode/answered"] == 0.5
    assert logged["episode/peak_context_tokens"] > 0
    with pytest.raises(EnvError):
        research_reward(environments=[])


def test_tool_schemas_are_what_trl_extracts(env) -> None:
    from transformers.utils import get_json_schema

    names = {
        get_json_schema(getattr(env, n))["function"]["name"]
        for n in ("search", "read", "fold", "unfold", "answer")
    }
    assert names == {"search", "read", "fold", "unfold", "answer"}
    fold = get_json_schema(env.fold)["function"]["parameters"]
    assert fold["required"] == ["target"]
