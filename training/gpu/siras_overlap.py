"""SIRAS shaping on the CPU side of a GPU step: its cost alone, and a step with it overlapped or not.

Shaping uses the project's estimators (``training.rl.advantages``: ``grpo``, ``siras``), imported lazily
because their config is a pydantic model; where that import fails, :func:`load_shaper` raises
:class:`SirasUnavailable` and the stage reports why. Overlapped schedule per step: shaping of batch i
runs in a worker thread while the GPU samples the next rollout, then batch i's update runs; the
sequential schedule runs rollout, shaping and update one after another.
"""

from __future__ import annotations

import dataclasses
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from training.gpu.rollout import sample
from training.gpu.shapes import BatchShape
from training.gpu.step import completion_batch, expand_advantages, rl_update


class SirasUnavailable(RuntimeError):
    """The project's estimators cannot be imported here (e.g. no pydantic on the device machine)."""


@dataclass
class Shaper:
    """A registered advantage estimator with its SIRAS config: (B, T) CPU batch in, (B, T) advantages out."""

    method: str
    estimator: Any
    config: Any
    context: Any

    def __call__(
        self, ids: torch.Tensor, mask: torch.Tensor, rewards: torch.Tensor, group: torch.Tensor,
        logprobs: torch.Tensor | None = None,
    ) -> torch.Tensor:  # fmt: skip
        from training.rl.advantages import AdvantageBatch

        batch = AdvantageBatch(
            token_ids=ids.cpu(), mask=mask.cpu().long(), rewards=rewards.cpu().float(), group=group.cpu(),
            logprobs=None if logprobs is None else logprobs.cpu().float(),
        )  # fmt: skip
        out = self.estimator(batch, self.config, self.context)
        if any(k == "normal" for k in out.stats.kinds):
            self.context = dataclasses.replace(self.context, s_batch_fallback=out.stats.s_batch)
        return out.advantages


def load_shaper(method: str, vocab_size: int, **siras: Any) -> Shaper:
    """The estimator ``method`` with ``SirasConfig(**siras)`` and no structural markers (synthetic tokens)."""
    try:
        from training.rl.advantages import EstimatorContext, get_adv_est
        from training.rl.siras import SirasConfig, StructureMarkers
    except ImportError as exc:
        raise SirasUnavailable(f"training.rl.advantages is not importable here: {exc}") from exc
    ctx = EstimatorContext(markers=StructureMarkers.empty(vocab_size))
    return Shaper(method, get_adv_est(method), SirasConfig(**siras), ctx)


def synthetic_rollouts(shape: BatchShape, vocab_size: int, seed: int = 0) -> dict[str, torch.Tensor]:
    """Sibling rollouts with shared scaffolding: each group copies one base sequence and replaces about
    30% of its 32-token segments; lengths vary by up to 20% (masked tail); a quarter of the groups are
    all-correct, a quarter all-wrong (degenerate), the rest mixed. Keys: ids, mask, rewards, group, logprobs."""
    rng = np.random.default_rng(seed)
    n, t = shape.rows, shape.completion_len
    ids = np.empty((n, t), dtype=np.int64)
    mask = np.ones((n, t), dtype=np.int64)
    rewards = np.empty(n)
    for g in range(shape.prompts):
        base = rng.integers(0, vocab_size, size=t)
        for k in range(shape.group):
            row = g * shape.group + k
            ids[row] = base
            for s in range(0, t, 32):
                if rng.random() < 0.3:
                    ids[row, s : s + 32] = rng.integers(0, vocab_size, size=min(32, t - s))
            mask[row, t - int(rng.integers(0, max(1, t // 5))) :] = 0
        kind = g % 4  # 0: all correct, 1: all wrong, else mixed
        r = np.full(shape.group, 1.0 if kind == 0 else 0.0)
        if kind > 1:
            r = rng.integers(0, 2, shape.group).astype(float)
            r[0] = 1.0 - r[1] if shape.group > 1 else r[0]
        rewards[g * shape.group : (g + 1) * shape.group] = r
    return {
        "ids": torch.from_numpy(ids), "mask": torch.from_numpy(mask), "rewards": torch.from_numpy(rewards),
        "group": torch.arange(n) // shape.group, "logprobs": torch.from_numpy(-rng.gamma(1.0, 1.0, (n, t))),
    }  # fmt: skip


def time_shaping(shaper: Shaper, batch: dict[str, torch.Tensor], repeats: int = 2) -> float:
    """Seconds per shaping call of ``batch`` (after one warm-up call: numba compiles there)."""
    shaper(**batch)
    start = time.perf_counter()
    for _ in range(repeats):
        shaper(**batch)
    return (time.perf_counter() - start) / repeats


def measure_overlap(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, shape: BatchShape, shaper: Shaper,
    batch: dict[str, torch.Tensor], rollout_tokens: int, steps: int, deadline: float,
) -> dict[str, float | int | None]:  # fmt: skip
    """Mean step seconds of the sequential and the overlapped schedule (module docstring) on ``batch``."""
    device = next(model.parameters()).device
    prompts = torch.randint(0, model.config.vocab_size, (shape.rows, shape.prompt_len), device=device)
    update = completion_batch(prompts, batch["ids"].to(device), batch["mask"].to(device))
    times: dict[str, list[float]] = {"sequential": [], "overlapped": []}
    parts: dict[str, list[float]] = {"rollout": [], "update": []}
    with ThreadPoolExecutor(max_workers=1) as pool:
        for i in range(2 * steps):
            if time.monotonic() > deadline:
                break
            mode = "sequential" if i % 2 == 0 else "overlapped"
            start = time.perf_counter()
            if mode == "sequential":
                roll = sample(model, prompts, rollout_tokens)
                adv = shaper(**batch)
            else:
                future = pool.submit(shaper, **batch)
                roll = sample(model, prompts, rollout_tokens)
                adv = future.result()
            rep = rl_update(model, optimizer, update, expand_advantages(adv.to(device), shape.prompt_len),
                            shape.micro_batch, shape.logit_chunk)  # fmt: skip
            times[mode].append(time.perf_counter() - start)
            parts["rollout"].append(roll.seconds)
            parts["update"].append(rep.step_s)
    out: dict[str, float | int | None] = {"steps": len(times["overlapped"]), "rollout_tokens": rollout_tokens}
    for key, vals in {**times, **parts}.items():
        out[f"{key}_s"] = float(np.mean(vals)) if vals else None
    if times["overlapped"] and times["sequential"]:
        out["overlap_saving"] = 1.0 - out["overlapped_s"] / out["sequential_s"]
    return out
