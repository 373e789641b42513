"""Async RL in the research environment (``RLRunConfig.async_rollouts = true``).

Rollout workers are threads, each owning a copy of the policy and a trainer built over that copy by
the ``build_trainer`` it is given (``training.rl.run.build_rl_trainer``: ``run_rl`` dispatches here and
passes it in), used only to generate: TRL's ``_generate_and_score_completions`` runs the agent's
multi-turn tool loop (``environment_factory``), masks the tool results and scores each episode with the
research reward. Its output is cut into sibling groups (completions with their loss masks and behaviour
log-probs, rewards already set, so verification passes them through) and queued; the learner
(:mod:`training.rl.pipeline.learner`) trains the main model with the configured estimator and publishes
weights, which each worker reloads before its next batch. Threads, not processes: the search backend
(index connections) is shared in-process and tool calls wait on I/O.
"""

from __future__ import annotations

import copy
import json
import math
from collections.abc import Callable
from typing import Any

import torch

from training.rl.pipeline.learner import Learner
from training.rl.pipeline.loop import run_thread_rollouts
from training.rl.pipeline.rollout import RolloutGroup
from training.rl.result import RLResult

# (cfg, questions, backend, *, model, tokenizer) -> a TRL GRPO trainer over that model
BuildTrainer = Callable[..., Any]


class TRLRollout:
    """Multi-turn sibling groups from TRL's generation on a private copy of the policy."""

    def __init__(
        self, cfg: Any, questions: list, backend: Any, model: Any, tok: Any, build_trainer: BuildTrainer
    ) -> None:
        self.model = copy.deepcopy(model)
        gen_cfg = cfg.model_copy(update={"advantage": cfg.advantage.model_copy(update={"method": "grpo"})})
        self.trainer = build_trainer(gen_cfg, questions, backend, model=self.model, tokenizer=tok)
        self.model.train()  # TRL's "train" mode: num_generations siblings per prompt
        self.tok = tok
        self.batches = self._batches()
        self.version = 0

    def _batches(self):
        while True:
            yield from self.trainer.get_train_dataloader()

    def sync(self, version: int, state: dict[str, torch.Tensor]) -> None:
        if version != self.version:
            self.model.load_state_dict(state, strict=True)
            self.version = version

    def generate(self) -> list[RolloutGroup]:
        out = self.trainer._generate_and_score_completions(next(self.batches))
        lps = out.get("sampling_per_token_logps")
        if lps is None:
            lps = out.get("old_per_token_logps")
        ids = torch.cat([out["prompt_ids"], out["completion_ids"]], dim=1)
        attn = torch.cat([out["prompt_mask"], out["completion_mask"]], dim=1)
        if lps is None:
            with torch.no_grad():
                lps, _, _ = self.trainer._get_per_token_logps_and_entropies(
                    self.model, ids, attn, out["completion_ids"].size(1), batch_size=ids.shape[0]
                )
        loss = out["completion_mask"] * (out["tool_mask"] if out.get("tool_mask") is not None else 1)
        rewards = self.trainer._siras_rewards.tolist()
        g = self.trainer.num_generations
        groups = []
        for start in range(0, ids.shape[0], g):
            rows = range(start, start + g)
            comps, masks, lpl, texts = [], [], [], []
            for i in rows:
                n = (
                    int(torch.nonzero(out["completion_mask"][i]).max()) + 1
                    if out["completion_mask"][i].any()
                    else 0
                )
                comps.append(out["completion_ids"][i, :n].tolist())
                masks.append(loss[i, :n].long().tolist())
                lpl.append(lps[i, :n].float().tolist())
                texts.append(self.tok.decode(comps[-1]))
            prompt = out["prompt_ids"][start][out["prompt_mask"][start].bool()].tolist()
            rw = [None if math.isnan(rewards[i]) else float(rewards[i]) for i in rows]
            groups.append(RolloutGroup(self.tok.decode(prompt), prompt, comps, lpl, texts, self.version, rw,
                                       loss_masks=masks))  # fmt: skip
        return groups


def run_rl_async(
    cfg: Any, questions: list, backend: Any, model: Any, tok: Any, *, build_trainer: BuildTrainer
) -> RLResult:
    """``run_rl`` with the async pipeline; returns the same ``RLResult``. ``build_trainer`` makes each
    rollout worker's generating trainer."""
    g = cfg.grpo
    if cfg.lora.enabled:
        raise ValueError("async_rollouts trains all parameters of the policy: set lora.enabled = false")
    pcfg = cfg.pipeline.model_copy(
        update={"num_generations": g.num_generations, "learning_rate": g.learning_rate, "temperature": g.temperature,
                "groups_per_step": max(1, g.per_device_train_batch_size // g.num_generations)}
    )  # fmt: skip
    learner = Learner(model, tok, pcfg, cfg.advantage.method, cfg.advantage.siras)
    rollouts = [TRLRollout(cfg, questions, backend, model, tok, build_trainer) for _ in range(pcfg.rollout_workers)]
    cfg.output_dir.mkdir(parents=True, exist_ok=True)
    log_path = cfg.output_dir / "log.jsonl"
    with log_path.open("w", encoding="utf-8") as f:

        def on_step(step: int, m: dict[str, float]) -> None:
            f.write(json.dumps({"step": step + 1, **m}) + "\n")
            f.flush()

        run_thread_rollouts(learner, rollouts, g.max_steps, on_step)
    final = cfg.output_dir / "final"
    model.save_pretrained(final)
    tok.save_pretrained(final)
    return RLResult(output_dir=cfg.output_dir, final_dir=final, global_step=learner.version, resumed_from=None,
                    log_path=log_path)  # fmt: skip
