"""A tiny seeded student learns a synthetic "pick the tool" task with GRPO and with SIRAS.

Vocabulary: 0 = start, 1..K = prompt classes, K+1..2K = tools, the rest filler. A prompt is
``[start, class c, filler, filler]``; the reward is 1 when the first tool token in the sampled completion
is the tool a fixed seeded permutation assigns to class c, else 0 (no tool, or the wrong one). The
student is a random-init tiny Qwen2 built from the seed, so nothing is carried but code. Both arms
start from the same weights and sample with the same seed; the reward of every step is logged.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import torch
from transformers import Qwen2ForCausalLM

from training.gpu.rollout import sample
from training.gpu.shapes import tiny_config
from training.gpu.siras_overlap import Shaper, load_shaper
from training.gpu.step import completion_batch, expand_advantages, rl_update

# SIRAS on 8-token completions: chunks short enough that sibling alignment has something to weigh
TOY_SIRAS = {"max_chunk_len": 4, "min_chunk_len": 2}


@dataclass(frozen=True)
class ToyTask:
    classes: int = 4
    vocab_size: int = 32
    prompt_len: int = 4
    completion_len: int = 8
    seed: int = 0

    def tools(self) -> torch.Tensor:
        """(K,) the correct tool token of each class (a seeded permutation of the tool tokens)."""
        perm = torch.randperm(self.classes, generator=torch.Generator().manual_seed(self.seed))
        return self.classes + 1 + perm

    def prompts(self, classes: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        filler = torch.randint(2 * self.classes + 1, self.vocab_size, (classes.numel(), self.prompt_len - 2),
                               generator=generator)  # fmt: skip
        start = torch.zeros(classes.numel(), 1, dtype=torch.long)
        return torch.cat([start, (classes + 1)[:, None], filler], dim=1)

    def rewards(self, classes: torch.Tensor, completions: torch.Tensor) -> torch.Tensor:
        """(B,) 1.0 where the first tool token of a completion is its class's tool."""
        is_tool = (completions > self.classes) & (completions <= 2 * self.classes)
        first = torch.where(is_tool.any(1), is_tool.float().argmax(1), 0)
        picked = completions.gather(1, first[:, None]).squeeze(1)
        return ((picked == self.tools().to(completions.device)[classes]) & is_tool.any(1)).float()


@dataclass
class ArmResult:
    method: str
    rewards: list[float] = field(default_factory=list)
    seconds: float = 0.0

    def summary(self) -> dict[str, float | int | str]:
        tail = self.rewards[-max(1, len(self.rewards) // 5) :]
        return {"method": self.method, "steps": len(self.rewards), "seconds": round(self.seconds, 2),
                "first_reward": self.rewards[0] if self.rewards else float("nan"),
                "final_reward": sum(tail) / max(1, len(tail))}  # fmt: skip


def student(task: ToyTask, device: torch.device, hidden_size: int = 64) -> Qwen2ForCausalLM:
    torch.manual_seed(task.seed)
    return Qwen2ForCausalLM(tiny_config(task.vocab_size, hidden_size)).to(device)


def run_arm(
    shaper: Shaper, task: ToyTask, device: torch.device, steps: int, prompts: int, group: int,
    deadline: float, lr: float = 3e-3,
) -> ArmResult:  # fmt: skip
    """``steps`` on-policy updates (``prompts`` × ``group`` rollouts each), stopping at ``deadline``."""
    model = student(task, device)
    opt = torch.optim.AdamW(model.parameters(), lr=lr)
    gen = torch.Generator().manual_seed(task.seed + 1)
    dev_gen = torch.Generator(device=device).manual_seed(task.seed + 2)
    result = ArmResult(shaper.method)
    start = time.perf_counter()
    for _ in range(steps):
        if time.monotonic() > deadline:
            break
        classes = torch.randint(0, task.classes, (prompts,), generator=gen).repeat_interleave(group)
        prompt_ids = task.prompts(classes, gen).to(device)
        roll = sample(model, prompt_ids, task.completion_len, generator=dev_gen)
        rewards = task.rewards(classes.to(device), roll.completions)
        mask = torch.ones_like(roll.completions)
        adv = shaper(roll.completions, mask, rewards, torch.arange(classes.numel()) // group, roll.logps)
        batch = completion_batch(prompt_ids, roll.completions)
        rl_update(model, opt, batch, expand_advantages(adv.to(device), task.prompt_len), micro_batch=prompts * group,
                  chunk=1024)  # fmt: skip
        result.rewards.append(float(rewards.mean()))
    result.seconds = time.perf_counter() - start
    return result


def learn(
    device: torch.device, steps: int, prompts: int, group: int, deadline: float, seed: int = 0
) -> dict[str, ArmResult]:
    """GRPO then SIRAS, each with half of the time left; raises SirasUnavailable without the estimators."""
    task = ToyTask(seed=seed)
    out: dict[str, ArmResult] = {}
    for i, method in enumerate(("grpo", "siras")):
        shaper = load_shaper(method, task.vocab_size, **TOY_SIRAS)
        arm_deadline = time.monotonic() + (deadline - time.monotonic()) / (2 - i)
        out[method] = run_arm(shaper, task, device, steps, prompts, group, arm_deadline)
    return out
