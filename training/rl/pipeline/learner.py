"""The pipeline's learner: verified sibling groups (possibly a few versions stale) → one policy step.

Advantages come from the registered estimator (``training.rl.advantages``: grpo, siras, …) on the
(B, T) batch of the step's groups. Loss per valid token, averaged over all valid tokens of the batch
(DAPO-style token mean, as TRL's default ``loss_type``):

    r_t = π_θ(y_t) / π_behaviour(y_t)          (behaviour = the policy version that sampled y)
    ℓ_t = −min(r_t·A_t, clip(r_t, 1 − ε, 1 + ε)·A_t), and for A_t < 0 at most −c·A_t (dual clip, c = is_cap)

With ``stale="importance"`` r_t uses the recorded behaviour log-probs, so a sample k versions old is
importance-weighted (and clipped) towards the current policy; with ``stale="drop"`` the behaviour is
taken to be the current policy (r_t = 1 in value) and only the lag bound (older samples dropped by
the queue) limits the bias. In the synchronous loop every sample is on-policy (r_t = 1).
"""

from __future__ import annotations

from typing import Any

import torch

from training.rl.advantages import AdvantageBatch, EstimatorContext, get_adv_est
from training.rl.pipeline.config import PipelineConfig
from training.rl.pipeline.rollout import RolloutGroup
from training.rl.siras import SirasConfig, StructureMarkers


class Learner:
    def __init__(
        self, model: Any, tok: Any, cfg: PipelineConfig, advantage: str, siras: SirasConfig | None = None
    ) -> None:
        self.model, self.tok, self.cfg = model, tok, cfg
        self.estimator = get_adv_est(advantage)
        self.siras = siras or SirasConfig()
        self.markers = StructureMarkers.from_tokenizer(tok)
        self.opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
        self.version = 0
        self._s_batch: float | None = None

    def _batch(self, groups: list[RolloutGroup]) -> dict[str, torch.Tensor]:
        rows = [(g, i, k) for k, g in enumerate(groups) for i in range(len(g.completions))]
        t = max(1, max(len(g.completions[i]) for g, i, _ in rows))
        p = max(len(g.prompt_ids) for g, _, _ in rows)
        b = len(rows)
        pad = self.tok.pad_token_id
        ids = torch.full((b, p + t), pad, dtype=torch.long)
        attn = torch.zeros((b, p + t), dtype=torch.long)
        comp = torch.full((b, t), pad, dtype=torch.long)
        mask = torch.zeros((b, t), dtype=torch.long)
        beh = torch.zeros((b, t))
        rewards = torch.zeros(b)
        group = torch.zeros(b, dtype=torch.long)
        for r, (g, i, k) in enumerate(rows):
            pl, c = len(g.prompt_ids), g.completions[i]
            ids[r, p - pl : p] = torch.tensor(g.prompt_ids)  # prompts left-padded, completions from column p
            attn[r, p - pl : p + len(c)] = 1
            ids[r, p : p + len(c)] = torch.tensor(c, dtype=torch.long)
            comp[r, : len(c)] = torch.tensor(c, dtype=torch.long)
            mask[r, : len(c)] = 1 if g.loss_masks is None else torch.tensor(g.loss_masks[i], dtype=torch.long)
            beh[r, : len(c)] = torch.tensor(g.logprobs[i])
            rw = g.rewards[i] if g.rewards is not None else None
            rewards[r] = float("nan") if rw is None else float(rw)
            group[r] = k
        return {"ids": ids, "attn": attn, "comp": comp, "mask": mask, "beh": beh, "rewards": rewards,
                "group": group, "p": torch.tensor(p)}  # fmt: skip

    def logps(self, batch: dict[str, torch.Tensor]) -> torch.Tensor:
        """(B, T) log π_θ of the completion tokens (with grad)."""
        p = int(batch["p"])
        logits = self.model(input_ids=batch["ids"], attention_mask=batch["attn"]).logits
        logits = logits[:, p - 1 : -1, :].float() / self.cfg.temperature
        return torch.log_softmax(logits, dim=-1).gather(-1, batch["comp"].unsqueeze(-1)).squeeze(-1)

    def step(self, groups: list[RolloutGroup], lags: list[int]) -> dict[str, float]:
        """One optimiser step on ``groups``; returns metrics (reward, lag, clip fraction, loss)."""
        self.model.train()
        batch = self._batch(groups)
        mask = batch["mask"].float()
        adv_in = AdvantageBatch(batch["comp"], batch["mask"], batch["rewards"], batch["group"], batch["beh"])
        ctx = EstimatorContext(markers=self.markers, s_batch_fallback=self._s_batch)
        out = self.estimator(adv_in, self.siras, ctx)
        if any(k == "normal" for k in out.stats.kinds):
            self._s_batch = out.stats.s_batch
        adv = out.advantages
        lp = self.logps(batch)
        beh = batch["beh"] if self.cfg.stale == "importance" else lp.detach()
        ratio = torch.exp(torch.clamp(lp - beh, max=20.0))
        eps = self.cfg.clip_eps
        surr = torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
        surr = torch.where(adv < 0, torch.maximum(surr, self.cfg.is_cap * adv), surr)  # dual clip
        loss = -(surr * mask).sum() / mask.sum().clamp(min=1.0)
        self.opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(self.model.parameters(), 1.0)
        self.opt.step()
        self.version += 1
        clipped = ((ratio - 1).abs() > eps).float()
        finite = torch.isfinite(batch["rewards"])
        return {
            "reward": float(batch["rewards"][finite].mean()) if finite.any() else float("nan"),
            "loss": float(loss.detach()),
            "mean_lag": sum(lags) / max(1, len(lags)),
            "clip_frac": float((clipped * mask).sum() / mask.sum().clamp(min=1.0)),
            "samples": float(mask.shape[0]),
        }
