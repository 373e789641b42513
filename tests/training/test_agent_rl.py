"""RL from agent rollouts: a rollout's turns share its advantage (GRPO) or its shaped advantages split
back turn by turn (SIRAS); the loss is the token mean of −A·log π over the batch; questions per step."""

from __future__ import annotations

import pytest
import torch

from training.rl.advantages import EstimatorContext
from training.rl.agent_rollout import Rollout, SampledTurn, SampledTurns
from training.rl.agent_run import AgentRL, QuestionStream
from training.rl.agent_step import policy_update, rollout_advantages, rollout_metrics
from training.rl.rewards import EpisodeOutcome, RewardBreakdown
from training.rl.siras import SirasConfig
from training.sft.data import TrainingQuestion


def _rollout(group: int, reward: float, turns: list[list[int]], valid: int | None = None) -> Rollout:
    sampled = [SampledTurn([1, 2, 3], t, [-0.5] * len(t)) for t in turns]
    outcome = EpisodeOutcome(answer="x" if reward > 0 else None, golds=["x"], tool_calls=len(turns))
    breakdown = RewardBreakdown(
        correctness=reward, em=reward, f1=reward, context_cost=0.0, format=0.0, total=reward
    )
    return Rollout(question=group, turns=sampled, outcome=outcome, reward=breakdown, policy_turns=len(turns),
                   valid_turns=len(turns) if valid is None else valid, seconds=1.0)  # fmt: skip


def test_grpo_gives_every_turn_of_a_rollout_its_group_advantage() -> None:
    rollouts = [_rollout(0, 1.0, [[5, 6], [7]]), _rollout(0, 0.0, [[5, 9, 9]]), _rollout(1, 0.5, [[4]]),
                _rollout(1, 0.5, [[4], [4]])]  # fmt: skip
    advs = rollout_advantages(rollouts, "grpo", SirasConfig(), EstimatorContext())
    assert [[len(t) for t in r] for r in advs.turns] == [[2, 1], [3], [1], [1, 1]]
    win, lose = advs.turns[0], advs.turns[1]
    assert all(bool((t > 0).all()) for t in win) and bool((lose[0] < 0).all())
    assert torch.allclose(win[0][0], -lose[0][0])  # two siblings: ±A
    assert all(bool((t == 0).all()) for r in advs.turns[2:] for t in r)  # a group of equal rewards: no signal


def test_siras_shapes_within_a_rollout_and_keeps_its_sign() -> None:
    rollouts = [_rollout(0, 1.0, [[5, 6, 7, 8], [9, 10]]), _rollout(0, 0.0, [[5, 6, 7, 8], [11, 12]])]
    config = SirasConfig(chunking="structure", gate=False, max_chunk_len=2)
    advs = rollout_advantages(rollouts, "siras", config, EstimatorContext())
    assert [[len(t) for t in r] for r in advs.turns] == [[4, 2], [4, 2]]
    assert all(bool((t >= 0).all()) for t in advs.turns[0]) and all(
        bool((t <= 0).all()) for t in advs.turns[1]
    )


class _TinyPolicy(torch.nn.Module):
    """A bigram policy (a test double of the causal LM's call signature): logits from the last token."""

    def __init__(self, vocab: int = 16) -> None:
        super().__init__()
        self.table = torch.nn.Parameter(torch.zeros(vocab, vocab))

    def forward(self, input_ids, logits_to_keep=0, use_cache=False):  # noqa: ARG002
        logits = self.table[input_ids]
        return type("Out", (), {"logits": logits[:, -logits_to_keep:] if logits_to_keep else logits})()


def test_the_update_raises_the_better_rollouts_tokens_and_lowers_the_worse() -> None:
    policy = _TinyPolicy()
    rollouts = [_rollout(0, 1.0, [[5]]), _rollout(0, 0.0, [[9]])]
    advs = rollout_advantages(rollouts, "grpo", SirasConfig(), EstimatorContext())
    optimizer = torch.optim.SGD(policy.parameters(), lr=1.0)
    out = policy_update(policy, optimizer, rollouts, advs, max_grad_norm=10.0, bf16=False)
    row = torch.log_softmax(policy.table[3], dim=-1)  # the prompt's last token is 3
    assert row[5] > row[0] > row[9]
    assert (
        out["train/turns"] == 2
        and out["grad_norm"] > 0
        and out["entropy"] == pytest.approx(torch.log(torch.tensor(16.0)).item())
    )


def test_a_batch_without_signal_makes_no_update() -> None:
    policy = _TinyPolicy()
    rollouts = [_rollout(0, 0.5, [[5]]), _rollout(0, 0.5, [[9]])]
    advs = rollout_advantages(rollouts, "grpo", SirasConfig(), EstimatorContext())
    out = policy_update(
        policy, torch.optim.SGD(policy.parameters(), lr=1.0), rollouts, advs, max_grad_norm=1.0, bf16=False
    )
    assert out["train/turns"] == 0 and bool((policy.table == 0).all())


def test_metrics_count_valid_turns_over_all_turns_and_zero_std_groups() -> None:
    rollouts = [_rollout(0, 1.0, [[5], [6]], valid=1), _rollout(0, 0.0, [[5]]), _rollout(1, 0.2, [[4]]),
                _rollout(1, 0.2, [[4]])]  # fmt: skip
    m = rollout_metrics(rollouts, group_size=2)
    assert m["episode/valid_call_rate"] == pytest.approx(4 / 5)
    assert m["frac_reward_zero_std"] == 0.5 and m["episode/answered"] == 0.75


def test_the_stream_covers_the_set_before_repeating() -> None:
    qs = [TrainingQuestion(id=str(i), question=f"q{i}?", golds=["a"]) for i in range(5)]
    stream = QuestionStream(qs, seed=0)
    seen = [stream.draw().id for _ in range(5)]
    assert sorted(seen) == [str(i) for i in range(5)]
    assert stream.draw().id == seen[0]


def test_a_resumed_stream_draws_on_where_the_saved_count_stopped() -> None:
    qs = [TrainingQuestion(id=str(i), question=f"q{i}?", golds=["a"]) for i in range(7)]
    first = QuestionStream(qs, seed=3)
    run = [first.draw().id for _ in range(10)]
    resumed = QuestionStream(qs, seed=3, drawn=4)
    assert [resumed.draw().id for _ in range(6)] == run[4:]


def _loop_with_groups(f1s_by_question: dict[str, list[float]], resample_flat: int) -> AgentRL:
    """An AgentRL whose rollouts are scripted per question (a test double of the llama.cpp engine: the
    real loop runs in test_agent_rl_runs_two_steps_saves_and_resumes)."""
    from types import SimpleNamespace

    loop = object.__new__(AgentRL)
    loop.cfg = SimpleNamespace(grpo=SimpleNamespace(num_generations=2, resample_flat=resample_flat))
    loop.engine = SimpleNamespace(calls=0)
    loop.group = lambda q, index: [_rollout(index, f1, [[5]]) for f1 in f1s_by_question[q.id]]
    return loop


def test_resampling_replaces_groups_whose_answers_all_score_the_same() -> None:
    qs = [TrainingQuestion(id=str(i), question=f"q{i}?", golds=["a"]) for i in range(4)]
    f1s = {"0": [0.0, 0.0], "1": [1.0, 1.0], "2": [0.0, 1.0], "3": [0.5, 0.0]}
    fresh = QuestionStream(qs, seed=0)
    order = [fresh.draw().id for _ in range(4)]
    loop = _loop_with_groups(f1s, resample_flat=3)
    stream = QuestionStream(qs, seed=0)
    questions, trained, drawn = loop.gather(stream, per_step=1, step=1)
    first_informative = next(i for i, q in enumerate(order) if len(set(f1s[q])) > 1)
    assert [q.id for q in questions] == [order[first_informative]]
    assert stream.drawn == first_informative + 1 and len(drawn) == 2 * (first_informative + 1)
    assert [r.question for r in trained] == [0, 0] and len(set(r.reward.f1 for r in trained)) == 2
    assert sorted({r.question for r in drawn}) == list(range(first_informative + 1))


def test_without_resampling_or_past_the_cap_flat_groups_are_trained_on() -> None:
    qs = [TrainingQuestion(id=str(i), question=f"q{i}?", golds=["a"]) for i in range(3)]
    flat = {str(i): [0.0, 0.0] for i in range(3)}
    questions, trained, drawn = _loop_with_groups(flat, 0).gather(QuestionStream(qs, 0), per_step=1, step=1)
    assert len(questions) == 1 and len(trained) == len(drawn) == 2
    stream = QuestionStream(qs, 0)
    questions, trained, drawn = _loop_with_groups(flat, 2).gather(stream, per_step=1, step=1)
    assert stream.drawn == 3 and len(drawn) == 6 and len(trained) == 2  # the first flat group fills the batch
    assert questions[0].id == QuestionStream(qs, 0).draw().id


def test_sampled_turns_sample_every_call_and_keep_prompt_and_tokens() -> None:
    class Engine:
        def __init__(self) -> None:
            self.temps: list[float | None] = []

        def generate(self, ids, max_new, temperature, logprobs=None, stop=None):
            self.temps.append(temperature)
            logprobs.extend([-1.0, -2.0])
            return [7, 8]

    engine = Engine()
    turns = SampledTurns(engine, temperature=0.9)
    assert turns.generate([1, 2], 4, None) == [7, 8]  # the agent asks for a greedy turn
    assert engine.temps == [0.9] and turns.turns == [SampledTurn([1, 2], [7, 8], [-1.0, -2.0])]


def test_the_resume_point_of_an_agent_run_is_its_last_whole_checkpoint(tmp_path) -> None:
    """What `train rl` announces before resuming: the step saved in the agent loop's own state file, not
    step 0 (the loop writes no trainer_state.json); a checkpoint still being written is not counted."""
    from training.config import RLRunConfig
    from training.rl.agent_run import STATE_FILE
    from training.rl.run import resume_point

    out = tmp_path / "rl"
    for step in (11, 12):
        (out / f"checkpoint-{step}").mkdir(parents=True)
        (out / f"checkpoint-{step}" / STATE_FILE).write_text(f'{{"step": {step}, "s_batch": null}}')
    (out / "checkpoint-13").mkdir()  # renamed into place only once whole: no state file yet
    spec = {"model": {"path": str(tmp_path)}, "output_dir": str(out), "questions": {"path": str(tmp_path)},
            "grpo": {"max_steps": 30}, "launch": {"rollout": "agent"}}  # fmt: skip
    point = resume_point(RLRunConfig.model_validate(spec))
    assert point.checkpoint == str(out / "checkpoint-12") and (point.step, point.remaining) == (12, 18)
    assert resume_point(RLRunConfig.model_validate({**spec, "resume": False})).step == 0
