"""One RL update from agent rollouts: advantages per token of each turn, the policy-gradient loss turn
by turn, and the step's metrics.

A rollout's turns are separate prompts (each the context the agent rendered at that turn), so a rollout
is not one token sequence as in TRL's tool loop. For the advantage estimators (``training.rl.advantages``,
which see rollouts as rows of tokens) a rollout's row is the concatenation of its turns' sampled tokens,
in order: GRPO gives every token the rollout's group-normalised reward, SIRAS reshapes it across those
tokens by how the siblings' turns diverge; the row's advantages are then split back turn by turn.

The loss is DAPO's token mean of −A_t · log π(t) over the batch's sampled tokens. One update is made per
batch of rollouts, so the policy that sampled is the policy differentiated (importance ratio 1, no old
log-probs, no clipping); what differs is the engine: llama.cpp sampled from the q8_0 weights with the
exported adapter, torch differentiates the full-precision ones — ``logprob_gap`` reports how far apart
their log-probs of the same tokens are. Turns whose advantages are all zero (a group whose rollouts all
scored the same) carry no gradient and are not run.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import torch

from training.rl.advantages import AdvantageBatch, AdvantageOutput, EstimatorContext, get_adv_est
from training.rl.agent_forward import PrefixForward
from training.rl.agent_rollout import Rollout, SampledTurn
from training.rl.rewards import episode_metrics


@dataclass
class TurnAdvantages:
    """Each rollout's per-turn advantage tensors (one float per sampled token) and the estimator's output."""

    turns: list[list[torch.Tensor]]
    output: AdvantageOutput


def rollout_advantages(
    rollouts: list[Rollout], method: str, siras: Any, ctx: EstimatorContext
) -> TurnAdvantages:
    """Advantages of every sampled token, by the registry's estimator ``method`` over sibling groups
    (``Rollout.question``)."""
    seqs = [[t for turn in r.turns for t in turn.completion_ids] for r in rollouts]
    lps = [[lp for turn in r.turns for lp in turn.logprobs] for r in rollouts]
    width = max([1, *map(len, seqs)])
    ids = torch.zeros(len(rollouts), width, dtype=torch.long)
    mask = torch.zeros(len(rollouts), width, dtype=torch.long)
    logprobs = torch.zeros(len(rollouts), width)
    for i, (seq, lp) in enumerate(zip(seqs, lps, strict=True)):
        ids[i, : len(seq)] = torch.tensor(seq, dtype=torch.long)
        mask[i, : len(seq)] = 1
        logprobs[i, : len(lp)] = torch.tensor(lp)
    batch = AdvantageBatch(
        token_ids=ids, mask=mask, rewards=torch.tensor([r.reward.total for r in rollouts], dtype=torch.float64),
        group=torch.tensor([r.question for r in rollouts]), logprobs=logprobs,
    )  # fmt: skip
    out = get_adv_est(method)(batch, siras, ctx)
    split: list[list[torch.Tensor]] = []
    for i, r in enumerate(rollouts):
        start, parts = 0, []
        for turn in r.turns:
            n = len(turn.completion_ids)
            parts.append(out.advantages[i, start : start + n].float())
            start += n
        split.append(parts)
    return TurnAdvantages(split, out)


@dataclass
class TurnStats:
    tokens: int = 0
    entropy_sum: float = 0.0
    gap_sum: float = 0.0
    kl_sum: float = 0.0
    turns: int = 0


def turn_backward(forward: PrefixForward, turn: SampledTurn, adv: torch.Tensor, denominator: int,
                  stats: TurnStats) -> float:  # fmt: skip
    """Backpropagate −Σ A_t log π(t) / ``denominator`` of one turn; the output head runs at the
    sampled positions only. Returns the turn's loss term."""
    completion = turn.completion_ids
    logits = forward.completion_logits(turn.prompt_ids + completion, len(completion))
    logp = torch.log_softmax(logits, dim=-1)
    picked = logp.gather(1, torch.tensor(completion)[:, None])[:, 0]
    loss = -(adv * picked).sum() / denominator
    loss.backward()
    ref = forward.reference_logits(turn.prompt_ids + completion, len(completion))
    with torch.no_grad():
        if ref is not None:  # k3 estimate of KL(policy || start) on the sampled tokens
            log_ratio = torch.log_softmax(ref, -1).gather(1, torch.tensor(completion)[:, None])[:, 0] - picked
            stats.kl_sum += float((log_ratio.exp() - 1 - log_ratio).sum())
        stats.entropy_sum += float(-(logp.exp() * logp).sum(-1).sum())
        stats.gap_sum += sum(abs(a - b) for a, b in zip(picked.tolist(), turn.logprobs, strict=False))
    stats.tokens += len(completion)
    stats.turns += 1
    return float(loss.detach())


def policy_update(model: Any, optimizer: Any, rollouts: list[Rollout], advs: TurnAdvantages, *,
                  max_grad_norm: float, bf16: bool, prefix: bool = True, prompt_grad: bool = True) -> dict[str, float]:  # fmt: skip
    """One optimiser step on the rollouts' turns; returns loss, grad norm, entropy and the log-prob gap.
    Turns are visited in token order, so turns sharing a prefix follow each other (``PrefixForward``;
    ``prefix=False``: every turn through the plain full forward; ``prompt_grad=False``: the backward
    over each call's positions only)."""
    model.train()
    optimizer.zero_grad(set_to_none=True)
    denominator = max(1, sum(len(t.completion_ids) for r in rollouts for t in r.turns))
    work = [(turn, adv) for r, parts in zip(rollouts, advs.turns, strict=True)
            for turn, adv in zip(r.turns, parts, strict=True)
            if turn.completion_ids and bool(adv.abs().sum() > 0)]  # fmt: skip
    work.sort(key=lambda pair: pair[0].prompt_ids + pair[0].completion_ids)
    forward = PrefixForward(model, split=None if prefix else 0, bf16=bf16, prompt_grad=prompt_grad)
    stats, loss = TurnStats(), 0.0
    for turn, adv in work:
        loss += turn_backward(forward, turn, adv, denominator, stats)
    params = [p for p in model.parameters() if p.requires_grad]
    norm = float(torch.nn.utils.clip_grad_norm_(params, max_grad_norm)) if stats.turns else 0.0
    if stats.turns:
        optimizer.step()
    optimizer.zero_grad(set_to_none=True)
    n = max(1, stats.tokens)
    return {
        "loss": loss, "grad_norm": norm, "entropy": stats.entropy_sum / n if stats.tokens else math.nan,
        "rollout/logprob_gap_mean": stats.gap_sum / n if stats.tokens else math.nan,
        "kl": stats.kl_sum / n if stats.tokens else math.nan,
        "train/turns": float(stats.turns), "train/tokens": float(stats.tokens),
        "train/prefix_reused": forward.reused / max(1, forward.reused + forward.evaluated),
        **({} if prompt_grad else {"train/top_prefix_reused": forward.top_reused / max(
            1, forward.top_reused + forward.top_evaluated)}),
    }  # fmt: skip


def rollout_metrics(rollouts: list[Rollout], group_size: int) -> dict[str, float]:
    """The episode metrics the TRL path logs (``training.rl.rewards.episode_metrics``: same names, so
    ``training.curves`` draws either), the reward's spread and the share of groups without signal."""
    n = max(1, len(rollouts))
    rewards = torch.tensor([r.reward.total for r in rollouts], dtype=torch.float64)
    groups = rewards.view(-1, group_size) if len(rollouts) % group_size == 0 and rollouts else rewards[None]
    episodes = episode_metrics([r.outcome for r in rollouts], [r.reward for r in rollouts],
                               [(r.policy_turns, r.valid_turns) for r in rollouts])  # fmt: skip
    return {
        "reward": float(rewards.mean()) if rollouts else math.nan,
        "reward_std": float(rewards.std()) if len(rollouts) > 1 else 0.0,
        "frac_reward_zero_std": float((groups.std(dim=1) == 0).double().mean()) if rollouts else math.nan,
        **episodes,
        "tools/call_frequency": sum(r.outcome.tool_calls for r in rollouts) / n,
        "rollout/generated_tokens": sum(len(t.completion_ids) for r in rollouts for t in r.turns) / n,
    }
