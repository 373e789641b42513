"""One RL policy update of the project's GRPO loss shape, with timing and peak memory.

The loss is TRL's token-level clipped policy gradient with ``loss_type="dapo"`` (the run config's
default): per token −min(ρ_t·A_t, clip(ρ_t, 1−ε_low, 1+ε_high)·A_t), ρ_t = exp(log π − log π_old),
summed over the loss mask and divided by the number of loss tokens in the whole batch, so micro-batches
accumulate to exactly the full-batch gradient. ``A`` is (B, T): GRPO's A_j broadcast, or SIRAS-shaped.
With ``old_logps=None`` the update is on-policy (π_old = the detached current log-probs, as TRL).
"""

from __future__ import annotations

import resource
import time
from dataclasses import asdict, dataclass

import torch

from training.gpu.logprobs import sequence_logprobs


@dataclass
class RolloutBatch:
    """``input_ids`` (B, L) prompt + completion; ``loss_mask`` (B, L-1) over the predicted tokens
    ``input_ids[:, 1:]`` (1 on completion tokens); optional ``old_logps`` (B, L-1) of the sampler."""

    input_ids: torch.Tensor
    loss_mask: torch.Tensor
    attention_mask: torch.Tensor | None = None
    old_logps: torch.Tensor | None = None


@dataclass
class StepReport:
    step_s: float
    tokens: int
    tokens_per_s: float
    loss: float
    peak_mem_gib: float
    mem_kind: str  # "cuda_max_allocated" or "rss_max" (process-wide, CPU runs)

    def to_dict(self) -> dict[str, float | int | str]:
        return asdict(self)


def dapo_loss(
    logps: torch.Tensor, old_logps: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor,
    num_items: float, eps_low: float = 0.2, eps_high: float = 0.2,
) -> torch.Tensor:  # fmt: skip
    """Sum over masked tokens of the clipped surrogate, divided by ``num_items`` (batch loss tokens)."""
    ratio = torch.exp(logps - old_logps)
    clipped = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    per_token = -torch.min(ratio * advantages, clipped * advantages)
    return (per_token * mask).sum() / max(num_items, 1.0)


def peak_memory_gib(device: torch.device) -> tuple[float, str]:
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / 2**30, "cuda_max_allocated"
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20, "rss_max"


def rl_update(
    model: torch.nn.Module, optimizer: torch.optim.Optimizer, batch: RolloutBatch, advantages: torch.Tensor,
    micro_batch: int, chunk: int = 1024,
) -> StepReport:  # fmt: skip
    """Forward + backward over micro-batches of ``micro_batch`` rows, then one optimiser step."""
    device = batch.input_ids.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
    start = time.perf_counter()
    mask = batch.loss_mask.float()
    num_items = float(mask.sum())
    adv = advantages.to(device=device, dtype=torch.float32)
    total = 0.0
    model.train()
    for lo in range(0, batch.input_ids.shape[0], micro_batch):
        rows = slice(lo, lo + micro_batch)
        attn = None if batch.attention_mask is None else batch.attention_mask[rows]
        logps = sequence_logprobs(model, batch.input_ids[rows], attn, chunk)
        old = logps.detach() if batch.old_logps is None else batch.old_logps[rows].to(logps)
        loss = dapo_loss(logps, old, adv[rows], mask[rows], num_items)
        loss.backward()
        total += float(loss.detach())
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    elapsed = time.perf_counter() - start
    peak, kind = peak_memory_gib(device)
    tokens = int(batch.input_ids.numel())
    return StepReport(elapsed, tokens, tokens / elapsed, total, peak, kind)


def completion_batch(
    prompts: torch.Tensor, completions: torch.Tensor, completion_mask: torch.Tensor | None = None,
    old_logps: torch.Tensor | None = None,
) -> RolloutBatch:  # fmt: skip
    """A :class:`RolloutBatch` of prompts (B, P) followed by completions (B, N): the loss sees the
    completion tokens (``completion_mask`` (B, N), default all), whose predictions sit at P-1 … L-2."""
    b, p = prompts.shape
    ids = torch.cat([prompts, completions], dim=1)
    mask = torch.zeros(b, ids.shape[1] - 1, device=ids.device)
    mask[:, p - 1 :] = 1.0 if completion_mask is None else completion_mask.to(mask)
    old = None
    if old_logps is not None:
        old = torch.zeros(mask.shape, device=ids.device)
        old[:, p - 1 :] = old_logps.to(old)
    return RolloutBatch(input_ids=ids, loss_mask=mask, old_logps=old)


def expand_advantages(advantages: torch.Tensor, prompt_len: int) -> torch.Tensor:
    """(B, N) completion-token advantages → (B, P+N-1), aligned with :func:`completion_batch`'s mask."""
    b, n = advantages.shape
    full = torch.zeros(b, prompt_len - 1 + n, dtype=torch.float32, device=advantages.device)
    full[:, prompt_len - 1 :] = advantages.float()
    return full
