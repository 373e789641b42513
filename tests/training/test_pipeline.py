"""Async RL pipeline: the bounded-staleness queue, the learner's off-policy correction, and both loops
end to end on the tiny model (CPU, HF generate)."""

from __future__ import annotations

import threading
import time

import pytest
import torch

from training.common.loading import load_model_and_tokenizer
from training.rl.pipeline import PipelineConfig, StalenessQueue
from training.rl.pipeline.learner import Learner
from training.rl.pipeline.loop import run_pipeline
from training.rl.pipeline.rollout import sample_group


def test_queue_drops_items_beyond_max_lag_and_reports_lag() -> None:
    version = [0]
    q: StalenessQueue[str] = StalenessQueue(4, max_lag=1, current_version=lambda: version[0])
    for name, v in (("a", 0), ("b", 1), ("c", 2), ("d", 3)):
        assert q.put(name, v)
    version[0] = 3
    assert q.get(timeout=0.1) == ("c", 1)  # a (lag 3) and b (lag 2) dropped on the way
    assert q.get(timeout=0.1) == ("d", 0)
    assert q.dropped == 2 and dict(q.lags) == {1: 1, 0: 1}
    assert q.get(timeout=0.05) is None  # empty: times out


def test_queue_backpressure_and_close() -> None:
    q: StalenessQueue[int] = StalenessQueue(1, max_lag=0, current_version=lambda: 0)
    assert q.put(1, 0)
    t0 = time.perf_counter()
    assert not q.put(2, 0, timeout=0.1) and time.perf_counter() - t0 >= 0.09  # full: the producer waits
    got: list = []
    th = threading.Thread(target=lambda: got.append(q.get()))
    assert q.get() == (1, 0)
    th.start()
    q.close()
    th.join(timeout=2)
    assert got == [None] and not q.put(3, 0)


def _toy_reward(prompts, completions, **kw):
    return [None if i == 0 else float(sum(ch.isdigit() for ch in c) > 2) for i, c in enumerate(completions)]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    from training.common.tiny import build_tiny_model

    return build_tiny_model(tmp_path_factory.mktemp("tiny_pipe"), seed=3)


def test_learner_on_policy_ratio_is_one_and_stale_samples_are_clipped(tiny) -> None:
    cfg = PipelineConfig(num_generations=4, max_new_tokens=12, groups_per_step=2, learning_rate=5e-2)
    model, tok = load_model_and_tokenizer(tiny, dtype=torch.float32)
    torch.manual_seed(0)
    learner = Learner(model, tok, cfg, "siras")
    groups = [sample_group(model, tok, p, cfg, 0) for p in ("What is 1 + 2?", "Name 3 digits.")]
    for g in groups:
        g.rewards = [1.0, 0.0, 1.0, None]
    batch = learner._batch(groups)
    with torch.no_grad():
        lp = learner.logps(batch)
    mask = batch["mask"].bool()
    assert torch.allclose(lp[mask], batch["beh"][mask], atol=1e-4)  # recorded behaviour = policy's
    before = [p.detach().clone() for p in model.parameters()]
    m = learner.step(groups, [0, 0])
    assert m["clip_frac"] == 0.0 and learner.version == 1
    assert any(not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters(), strict=True))
    for _ in range(3):
        learner.step(groups, [1, 1])  # the same samples, now from an older policy: ratios move, clipped
    assert learner.step(groups, [4, 4])["clip_frac"] > 0.0


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_pipeline_runs_end_to_end(tiny, mode) -> None:
    cfg = PipelineConfig(
        num_generations=4, max_new_tokens=10, groups_per_step=2, rollout_workers=1, verify_workers=2,
        queue_size=2, max_lag=1,
    )  # fmt: skip
    prompts = (f"What is {i} + {i}?" for i in range(1000))
    seen: list[int] = []
    res = run_pipeline(
        tiny, prompts, _toy_reward, 3, cfg, "siras", mode=mode, on_step=lambda s, m: seen.append(s)
    )
    assert seen == [0, 1, 2] and len(res.rewards) == 3 and res.samples == 3 * 2 * 4
    assert res.wall_s > 0 and res.samples_per_s > 0
    assert all(lag <= cfg.max_lag for lag in res.lags)
    assert res.generated >= 6
