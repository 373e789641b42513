"""GRPO with SIRAS advantages: a TRL ``GRPOTrainer`` whose loss sees per-token (B, T) advantages.

Entry point for ``app.py train rl`` (and scripts)::

    from training.rl.trainer import SirasGRPOTrainer
    from training.rl.siras import SirasConfig
    trainer = SirasGRPOTrainer(model=path_or_model, reward_funcs=[...], args=GRPOConfig(...),
                               train_dataset=ds, processing_class=tokenizer, siras_config=SirasConfig())
    trainer.train()

How it plugs in (TRL 1.16): ``_generate_and_score_completions`` runs as usual (rollouts, rewards, GRPO
advantages A_j of shape (B,)); afterwards the whole generation batch is gathered across processes
(so every prompt's sibling group is complete — groups are the consecutive blocks of
``num_generations`` rows TRL itself normalises over), each rollout's valid tokens (completion mask ×
tool mask: tool-result tokens stay masked and also split chunks) are shaped by SIRAS, and this
process's rows come back as a (B, T) tensor. ``_compute_loss`` only unsqueezes 1-D advantages, so the
(B, T) tensor reaches the policy loss unchanged. Per step it logs ``siras/degenerate_frac``,
``siras/mean_abs_adv``, ``siras/multiplier_spread``, ``siras/entropy``, ``siras/s_batch`` and
``siras/shaping_ms`` (``siras/logps_ms``: the extra no-grad forward for surprise log-probs, only
when TRL did not compute them already). ``siras_config.enabled=False`` gives plain GRPO with identical plumbing.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from trl import GRPOTrainer

from training.rl.siras import SiblingGroup, SirasConfig, StructureMarkers, shape_batch


class SirasGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with SIRAS token-level advantages (see module docstring)."""

    def __init__(self, *args: Any, siras_config: SirasConfig | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.siras_config = siras_config or SirasConfig()
        tok = getattr(self.processing_class, "tokenizer", self.processing_class)
        self.siras_markers = StructureMarkers.from_tokenizer(tok)
        self._siras_rewards: torch.Tensor | None = None
        self._siras_s_batch = self.siras_config.s_batch_fallback
        self.last_shaped_advantages: torch.Tensor | None = None  # this process's last (B, T) advantages

    # TRL computes rewards for the whole (gathered) generation batch here; keep them for the residuals.
    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        self._siras_rewards = (rewards_per_func * weights).nansum(dim=1)
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        out = super()._generate_and_score_completions(inputs)
        if not self.model.training or self._siras_rewards is None:
            return out
        start = time.perf_counter()
        logps, entropy = self._siras_logps(out)
        mid = time.perf_counter()
        shaped, stats = self._siras_shape(out, logps)
        out["advantages"] = shaped
        self.last_shaped_advantages = shaped.detach().clone()
        ms = (time.perf_counter() - mid) * 1000.0
        mask = self._loss_mask(out).bool()
        metrics = self._metrics["train"]
        n_groups = max(1, len(stats.kinds))
        metrics["siras/degenerate_frac"].append(sum(k != "normal" for k in stats.kinds) / n_groups)
        metrics["siras/mean_abs_adv"].append(float(shaped[mask].abs().mean()) if mask.any() else 0.0)
        spread = float(np.mean(stats.multiplier_std)) if stats.multiplier_std else 0.0
        metrics["siras/multiplier_spread"].append(spread)
        metrics["siras/s_batch"].append(stats.s_batch)
        metrics["siras/shaping_ms"].append(ms)
        metrics["siras/logps_ms"].append((mid - start) * 1000.0)
        if entropy is not None:
            metrics["siras/entropy"].append(entropy)
        return out

    @staticmethod
    def _loss_mask(out: dict[str, Any]) -> torch.Tensor:
        mask = out["completion_mask"]
        if out.get("tool_mask") is not None:
            mask = mask * out["tool_mask"]
        return mask

    def _siras_logps(self, out: dict[str, Any]) -> tuple[torch.Tensor | None, float | None]:
        """Per-token log-probs of the sampled tokens (reused from TRL when it has them) and mean entropy."""
        for key in ("sampling_per_token_logps", "old_per_token_logps"):
            if out.get(key) is not None:
                return out[key].detach(), None
        cfg = self.siras_config
        if not (cfg.chunking == "hybrid" or cfg.gate) or not cfg.enabled:
            return None, None
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        attn = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        with torch.no_grad():
            logps, ent, _ = self._get_per_token_logps_and_entropies(
                self.model, ids, attn, out["completion_ids"].size(1),
                batch_size=self.args.per_device_train_batch_size, compute_entropy=True,
            )  # fmt: skip
        mask = self._loss_mask(out).bool()
        return logps, (float(ent[mask].mean()) if mask.any() else None)

    def _gather_rows(self, x: torch.Tensor, pad: float | int) -> torch.Tensor:
        if self.accelerator.num_processes == 1:
            return x
        x = self.accelerator.pad_across_processes(x, dim=1, pad_index=pad)
        return self.accelerator.gather(x)

    def _siras_shape(self, out: dict[str, Any], logps: torch.Tensor | None = None):
        """Shape the gathered batch; returns this process's (B, T) advantages and the stats."""
        cfg = self.siras_config
        local_b, local_t = out["completion_ids"].shape
        device = out["completion_ids"].device
        mask = self._gather_rows(self._loss_mask(out).long(), 0).cpu()
        ids = self._gather_rows(out["completion_ids"], 0).cpu()
        adv = self._gather_rows(out["advantages"].float().unsqueeze(1), 0.0).squeeze(1).cpu()
        lps = self._gather_rows(logps.float(), 0.0).cpu() if logps is not None else None
        rewards = self._siras_rewards.detach().float().cpu()
        g = self.num_generations
        total = ids.shape[0]
        if total % g or rewards.shape[0] != total:
            raise ValueError(
                f"SIRAS needs whole sibling groups: gathered batch {total} rows, rewards {rewards.shape[0]}, "
                f"num_generations {g} (generation_batch_size must be a multiple of num_generations)"
            )
        groups, rows = [], []
        for start in range(0, total, g):
            toks, lpl, brk = [], [], []
            for i in range(start, start + g):
                pos = torch.nonzero(mask[i], as_tuple=False).squeeze(1)
                toks.append(ids[i, pos].numpy())
                lpl.append(lps[i, pos].numpy() if lps is not None else None)
                gaps = np.zeros(pos.numel(), dtype=bool)
                if pos.numel() > 1:
                    gaps[1:] = (pos[1:] - pos[:-1] > 1).numpy()  # masked tool output was cut out here
                brk.append(gaps)
                rows.append(pos)
            groups.append(
                SiblingGroup(
                    token_ids=toks,
                    rewards=rewards[start : start + g].numpy(),
                    advantages=adv[start : start + g].numpy(),
                    logprobs=lpl if lps is not None else None,
                    breaks=brk,
                )
            )
        shaped_groups, stats = shape_batch(groups, cfg, self.siras_markers, self._siras_s_batch)
        if any(k == "normal" for k in stats.kinds):
            self._siras_s_batch = stats.s_batch  # fallback for a later all-degenerate batch
        full = torch.zeros(total, ids.shape[1], dtype=torch.float32)
        flat = [t for grp in shaped_groups for t in grp]
        for i, (pos, vals) in enumerate(zip(rows, flat, strict=True)):
            full[i, pos] = vals.float()
        first = self.accelerator.process_index * local_b
        return full[first : first + local_b, :local_t].to(device), stats
