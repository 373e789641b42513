"""GRPO with registered advantage estimators: a TRL ``GRPOTrainer`` whose loss sees (B, T) advantages.

Entry point for ``app.py train rl`` (and scripts)::

    from training.rl.trainer import SirasGRPOTrainer
    from training.rl.siras import SirasConfig
    trainer = SirasGRPOTrainer(model=path_or_model, reward_funcs=[...], args=GRPOConfig(...),
                               train_dataset=ds, processing_class=tokenizer,
                               advantage="siras", siras_config=SirasConfig())
    trainer.train()

How it plugs in (written for TRL 1.16 — the private methods overridden here are pinned in
pyproject.toml and checked by tests/training/test_rl_trainer.py): ``_calculate_rewards`` keeps the
gathered per-function rewards (a row whose functions all returned None stays NaN — unscorable — where
TRL's ``nansum`` would make it 0); ``_generate_and_score_completions`` runs TRL's generation, then the
whole generation batch is gathered across processes (every prompt's sibling group complete — groups
are the consecutive blocks of ``num_generations`` rows TRL itself normalises over) and handed to the
estimator named by ``advantage`` (``training.rl.advantages``); this process's rows come back as a
(B, T) tensor in ``advantages``. ``_compute_loss`` only unsqueezes 1-D advantages, so the (B, T)
tensor reaches the policy loss unchanged. Per step it logs ``siras/degenerate_frac``,
``siras/mean_abs_adv``, ``siras/multiplier_spread``, ``siras/entropy``, ``siras/s_batch``,
``siras/cluster_skipped``, ``siras/unusable`` and ``siras/shaping_ms`` (``siras/logps_ms``: the extra
no-grad forward for surprise log-probs, only when TRL did not compute them already).
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import torch
from trl import GRPOTrainer

from training.rl.advantages import AdvantageBatch, EstimatorContext, get_adv_est
from training.rl.siras import SirasConfig, StructureMarkers


class SirasGRPOTrainer(GRPOTrainer):
    """``GRPOTrainer`` with token-level advantages from a registered estimator (module docstring)."""

    def __init__(
        self, *args: Any, advantage: str = "siras", siras_config: SirasConfig | None = None, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        agg = getattr(self.args, "multi_objective_aggregation", "sum_then_normalize")
        if agg != "sum_then_normalize":
            raise ValueError(
                f"SirasGRPOTrainer computes A_j from the summed reward; multi_objective_aggregation={agg!r}"
            )
        self.advantage_name = advantage
        self.estimator = get_adv_est(advantage)
        self.siras_config = siras_config or SirasConfig()
        tok = getattr(self.processing_class, "tokenizer", self.processing_class)
        self.siras_markers = StructureMarkers.from_tokenizer(tok)
        self._success_col: int | None = None
        if self.siras_config.success_reward is not None:
            names = list(self.reward_func_names)
            if self.siras_config.success_reward not in names:
                raise ValueError(
                    f"success_reward {self.siras_config.success_reward!r} is not a reward function "
                    f"(reward functions: {names})"
                )
            self._success_col = names.index(self.siras_config.success_reward)
        self._siras_rewards: torch.Tensor | None = None
        self._siras_success: torch.Tensor | None = None
        self._siras_s_batch: float | None = None
        self.last_shaped_advantages: torch.Tensor | None = None  # this process's last (B, T) advantages
        # rollouts through llama.cpp (training.rl.llama_rollout.attach_llama_rollouts); None: TRL's own
        self.rollout_engine: Any = None
        self._engine_step: int | None = None

    def _generate_single_turn(self, prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):  # type: ignore[override]
        """One generation turn of every rollout. With a llama.cpp rollout engine: the adapter is exported
        when the optimiser has stepped since the last export (as TRL syncs vLLM's weights), then each row
        is sampled there at the run's temperature and per-turn cap; TRL's tool loop, masks and the loss
        are unchanged (log-probs come from torch, as on the transformers path)."""
        engine = self.rollout_engine
        if engine is None:
            return super()._generate_single_turn(prompt_ids, images, multimodal_fields, num_generations, has_tool_images)
        mode = "train" if self.model.training else "eval"
        if self._engine_step != self.state.global_step:
            sync = engine.sync(self.accelerator.unwrap_model(self.model))
            self._engine_step = self.state.global_step
            for part in ("save_s", "convert_s", "load_s"):
                self._metrics[mode][f"rollout/adapter_{part}"].append(getattr(sync, part))
        before_s, before_tokens = engine.generate_s, engine.generated_tokens
        cap = self.generation_config.max_new_tokens or self.max_completion_length
        out = [engine.generate(list(map(int, ids)), cap, self.temperature) for ids in prompt_ids]
        self._metrics[mode]["rollout/generate_s"].append(engine.generate_s - before_s)
        self._metrics[mode]["rollout/generated_tokens"].append(float(engine.generated_tokens - before_tokens))
        return out, None

    def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):  # type: ignore[override]
        rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
        weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
        total = (rewards_per_func * weights).nansum(dim=1)
        unscored = torch.isnan(rewards_per_func).all(dim=1)
        self._siras_rewards = torch.where(unscored, torch.full_like(total, float("nan")), total)
        col = self._success_col
        self._siras_success = None if col is None else rewards_per_func[:, col].detach().clone()
        return rewards_per_func

    def _generate_and_score_completions(self, inputs):  # type: ignore[override]
        out = super()._generate_and_score_completions(inputs)
        if not self.model.training or self._siras_rewards is None:
            return out
        start = time.perf_counter()
        needs_lp = self.advantage_name != "grpo" and self.siras_config.enabled and self.siras_config.reads_logprobs
        logps, entropy = self._siras_logps(out) if needs_lp else (None, None)
        mid = time.perf_counter()
        shaped, stats = self._siras_shape(out, logps)
        out["advantages"] = shaped
        self.last_shaped_advantages = shaped.detach().clone()
        ms = (time.perf_counter() - mid) * 1000.0
        if self.advantage_name == "grpo":
            return out  # plain GRPO: TRL's own metrics only
        mask = self._loss_mask(out).bool()
        metrics = self._metrics["train"]
        n_groups = max(1, len(stats.kinds))
        metrics["siras/degenerate_frac"].append(sum(k != "normal" for k in stats.kinds) / n_groups)
        metrics["siras/mean_abs_adv"].append(float(shaped[mask].abs().mean()) if mask.any() else 0.0)
        spread = float(np.mean(stats.multiplier_std)) if stats.multiplier_std else 0.0
        metrics["siras/multiplier_spread"].append(spread)
        metrics["siras/s_batch"].append(stats.s_batch)
        metrics["siras/cluster_skipped"].append(float(stats.cluster_skipped))
        metrics["siras/unusable"].append(float(stats.unusable))
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
        if not (cfg.chunking == "hybrid" or cfg.gate):
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
        """Run the estimator on the gathered batch; returns this process's (B, T) advantages and stats."""
        local_b, local_t = out["completion_ids"].shape
        device = out["completion_ids"].device
        mask = self._gather_rows(self._loss_mask(out).long(), 0).cpu()
        ids = self._gather_rows(out["completion_ids"], 0).cpu()
        lps = self._gather_rows(logps.float(), 0.0).cpu() if logps is not None else None
        rewards = self._siras_rewards.detach().float().cpu()
        g = self.num_generations
        total = ids.shape[0]
        if total % g or rewards.shape[0] != total:
            raise ValueError(
                f"SIRAS needs whole sibling groups: gathered batch {total} rows, rewards {rewards.shape[0]}, "
                f"num_generations {g} (generation_batch_size must be a multiple of num_generations)"
            )
        success = self._siras_success.detach().float().cpu() if self._siras_success is not None else None
        batch = AdvantageBatch(
            token_ids=ids, mask=mask, rewards=rewards, group=torch.arange(total) // g, logprobs=lps,
            success=success,
        )  # fmt: skip
        ctx = EstimatorContext(
            scale=_scale(getattr(self.args, "scale_rewards", "group")),
            markers=self.siras_markers,
            s_batch_fallback=self._siras_s_batch,
        )
        result = self.estimator(batch, self.siras_config, ctx)
        if any(k == "normal" for k in result.stats.kinds):
            self._siras_s_batch = result.stats.s_batch  # fallback for a later all-degenerate batch
        first = self.accelerator.process_index * local_b
        return result.advantages[first : first + local_b, :local_t].to(device), result.stats


def _scale(value: Any) -> str:
    """TRL's ``scale_rewards`` (bool in older releases, "group"/"batch"/"none" in 1.x)."""
    if value is True:
        return "group"
    if value is False or value is None:
        return "none"
    return str(value)
