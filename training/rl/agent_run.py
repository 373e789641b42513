"""RL whose rollouts are runs of the agent itself (``launch.rollout = "agent"``), on CPU.

Why not TRL's tool loop for the product's student: it trains on one append-only conversation per
rollout (tool results appended after the model's turns), while the agent gives the model a fresh prompt
at every turn — the rendered context with folds replaced by their blocks, the status line, the tools —
and SFT trains on exactly those prompts. An SFT student sampled in the append-only format wrote a valid
call in about a quarter of its turns, and there a fold could never shrink what the model trains on.
Here a rollout is ``agent.runner.run_agent`` with the model policy (``training.rl.agent_rollout``), each
turn a row with its own prompt, as in SFT and at inference.

A step: ``per_device_train_batch_size / num_generations`` training questions, ``num_generations`` sampled
runs each (llama.cpp: the base GGUF q8_0 + the current adapter), rewards (``training.rl.rewards``),
advantages by the registry's estimator (``[advantage] method``), one AdamW update on the LoRA adapter
(``training.rl.agent_step``), the adapter exported to GGUF for the next rollouts. Every ``save_steps`` the
adapter, the optimiser and the step are saved (``checkpoint-N``), and a rerun with ``resume = true``
continues there; the metrics go to ``log.jsonl`` (appended, so curves span resumed runs) and, with
``report_to = "tensorboard"``, to ``output_dir/tb``. The end: the merged model in ``final`` with its
GGUF export and the run options it was trained with (``eventfold_run.json``), so ``ask --model`` serves
it as trained.
"""

from __future__ import annotations

import json
import math
import random
import shutil
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import torch

from eventfold.run_options import TRAINED_RUN_FILE, trained_run_options
from training.config import RLRunConfig
from training.rl.advantages import EstimatorContext
from training.rl.agent_rollout import Rollout, rollout_options, run_rollout
from training.rl.agent_step import policy_update, rollout_advantages, rollout_metrics
from training.rl.result import RLResult
from training.sft.data import TrainingQuestion

STATE_FILE = "agent_rl_state.json"


class QuestionStream:
    """The training questions in one seeded order, drawn one at a time and wrapping round. ``drawn`` is
    saved with each checkpoint, so a resumed run draws on where it stopped even when a step drew more
    questions than it trained on (``[grpo] resample_flat``)."""

    def __init__(self, questions: list[TrainingQuestion], seed: int, drawn: int = 0) -> None:
        if not questions:
            raise ValueError("no training questions to draw from")
        self.questions, self.drawn = questions, drawn
        self.order = list(range(len(questions)))
        random.Random(seed).shuffle(self.order)

    def draw(self) -> TrainingQuestion:
        q = self.questions[self.order[self.drawn % len(self.order)]]
        self.drawn += 1
        return q


def informative(group: list[Rollout]) -> bool:
    """Whether a sibling group's answers differ in F1: only then do its advantages carry answer quality
    rather than format and context cost alone."""
    f1s = [r.reward.f1 for r in group]
    return max(f1s) - min(f1s) > 1e-9


def checkpoints(output_dir: Path) -> list[Path]:
    done = [p for p in output_dir.glob("checkpoint-*") if (p / STATE_FILE).is_file()]
    return sorted(done, key=lambda p: int(p.name.split("-")[1]))


def save_checkpoint(
    output_dir: Path, step: int, model: Any, optimizer: Any, state: dict[str, Any], keep: int = 2
) -> Path:
    """The adapter, the optimiser and the loop's state after ``step``; written to a temporary folder and
    renamed, so a checkpoint that exists is whole."""
    final = output_dir / f"checkpoint-{step}"
    tmp = output_dir / f".checkpoint-{step}.tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(str(tmp))
    torch.save(optimizer.state_dict(), tmp / "optimizer.pt")
    (tmp / STATE_FILE).write_text(json.dumps({**state, "step": step}), encoding="utf-8")
    shutil.rmtree(final, ignore_errors=True)
    tmp.rename(final)
    for old in checkpoints(output_dir)[:-keep]:
        shutil.rmtree(old, ignore_errors=True)
    return final


def load_checkpoint(ckpt: Path, model: Any, optimizer: Any) -> dict[str, Any]:
    from peft import set_peft_model_state_dict
    from safetensors.torch import load_file

    set_peft_model_state_dict(model, load_file(str(ckpt / "adapter_model.safetensors")))
    optimizer.load_state_dict(torch.load(ckpt / "optimizer.pt", weights_only=True))
    return checkpoint_state(ckpt)


def checkpoint_state(ckpt: Path) -> dict[str, Any]:
    """The loop state saved with a checkpoint: its step and the SIRAS fallback batch."""
    return json.loads((ckpt / STATE_FILE).read_text(encoding="utf-8"))


def save_rollouts(
    path: Path, questions: list[TrainingQuestion], rollouts: list[Rollout], tokenizer: Any
) -> None:
    """A step's rollouts as trained on (token ids, the sampled calls as text, rewards): for reading what
    the policy did, and for ``bench/rl_update.py`` to replay the update."""
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [
        {"question_id": questions[r.question].id, "group": r.question, "answer": r.answer,
         "reward": r.reward.total, "f1": r.reward.f1, "valid_turns": r.valid_turns, "policy_turns": r.policy_turns,
         "turns": [{"prompt_ids": t.prompt_ids, "completion_ids": t.completion_ids, "logprobs": t.logprobs,
                    "completion": tokenizer.decode(t.completion_ids)} for t in r.turns]}
        for r in rollouts
    ]  # fmt: skip
    path.write_text(
        json.dumps({"questions": [q.question for q in questions], "rollouts": rows}), encoding="utf-8"
    )


class AgentRL:
    """The loop's parts, built once: the policy (peft LoRA over the student), its tokenizer, the
    optimiser, the rollout engine and the metric writers."""

    def __init__(self, cfg: RLRunConfig, backend: Any) -> None:
        from peft import get_peft_model
        from trl.chat_template_utils import add_response_schema

        from eventfold.settings import Settings
        from training.common.export import export_gguf
        from training.common.loading import load_model_and_tokenizer
        from training.rl.llama_rollout import LoraRolloutEngine
        from training.rl.siras import StructureMarkers
        from training.sft.train import ensure_model, peft_config

        if not cfg.lora.enabled or cfg.lora.modules_to_save:
            raise ValueError("agent rollouts apply a LoRA adapter over the base GGUF: set [lora] enabled = true, "
                             "without modules_to_save")  # fmt: skip
        self.cfg, self.backend = cfg, backend
        self.model_dir = ensure_model(cfg.model)
        base, tok = load_model_and_tokenizer(self.model_dir, dtype=cfg.model.dtype)
        self.tokenizer = add_response_schema(tok)
        self.model = get_peft_model(base, peft_config(cfg.lora))
        params = [p for p in self.model.parameters() if p.requires_grad]
        self.optimizer = torch.optim.AdamW(params, lr=cfg.grpo.learning_rate, weight_decay=0.0)
        cache = Settings().cache_dir
        eos = tuple(i for i in (tok.eos_token_id, tok.pad_token_id) if i is not None)
        self.engine = LoraRolloutEngine(
            export_gguf(self.model_dir, cache, outtype="q8_0"), self.model_dir, cache,
            cfg.output_dir / "rollout_adapters", n_ctx=8192, eos_ids=eos, seed=cfg.grpo.seed,
        )  # fmt: skip
        self.options = rollout_options(cfg.env.run)
        self.markers = StructureMarkers.from_tokenizer(self.tokenizer)
        self.s_batch: float | None = None
        self.writer = self._writer()

    def _writer(self) -> Any:
        if self.cfg.report_to != "tensorboard":
            return None
        from torch.utils.tensorboard import SummaryWriter

        return SummaryWriter(log_dir=str(self.cfg.output_dir / "tb"))

    def group(self, q: TrainingQuestion, index: int) -> list[Rollout]:
        g = self.cfg.grpo
        return [
            run_rollout(q, index, engine=self.engine, tokenizer=self.tokenizer, backend=self.backend,
                        options=self.options, reward=self.cfg.env.reward, temperature=g.temperature)
            for _ in range(g.num_generations)
        ]  # fmt: skip

    def gather(
        self, stream: QuestionStream, per_step: int, step: int
    ) -> tuple[list[TrainingQuestion], list[Rollout], list[Rollout]]:
        """The step's sibling groups: ``per_step`` questions drawn, and with ``resample_flat`` up to that
        many more in place of groups whose answers all scored the same F1. Returns the questions trained
        on, their rollouts (group ``i`` for question ``i``) and every rollout drawn, trained first: the
        logged reward is over all of them, so the curve is the policy's and not the filter's."""
        g = self.cfg.grpo
        self.engine.calls = step * 100_000  # a step's samples draw the same seeds on a resumed run
        kept: list[tuple[TrainingQuestion, list[Rollout]]] = []
        flat: list[tuple[TrainingQuestion, list[Rollout]]] = []
        for n in range(per_step + g.resample_flat):
            if len(kept) == per_step:
                break
            q = stream.draw()
            group = self.group(q, n)
            (kept if not g.resample_flat or informative(group) else flat).append((q, group))
        ordered = kept + flat  # too few groups that differ: flat ones fill the batch (format, cost signal)
        drawn = [replace(r, question=i) for i, (_, grp) in enumerate(ordered) for r in grp]
        trained = drawn[: per_step * g.num_generations]
        return [q for q, _ in ordered[:per_step]], trained, drawn

    def step(self, stream: QuestionStream, per_step: int, step: int) -> dict[str, float]:
        """Rollouts, advantages, one update, the adapter exported: the step's metrics and times."""
        t0 = time.perf_counter()
        gen0 = self.engine.generate_s
        evaluated0, reused0 = self.engine.prompt_evaluated, self.engine.prompt_reused
        questions, rollouts, drawn = self.gather(stream, per_step, step)
        save_rollouts(
            self.cfg.output_dir / "rollouts" / f"step-{step:05d}.json", questions, rollouts, self.tokenizer
        )
        t1 = time.perf_counter()
        ctx = EstimatorContext(markers=self.markers, s_batch_fallback=self.s_batch)
        advs = rollout_advantages(rollouts, self.cfg.advantage.method, self.cfg.advantage.siras, ctx)
        if any(k == "normal" for k in advs.output.stats.kinds):
            self.s_batch = advs.output.stats.s_batch
        t2 = time.perf_counter()
        update = policy_update(self.model, self.optimizer, rollouts, advs, max_grad_norm=self.cfg.grpo.max_grad_norm,
                               bf16=self.cfg.grpo.bf16, prompt_grad=self.cfg.grpo.prompt_grad)  # fmt: skip
        t3 = time.perf_counter()
        sync = self.engine.sync(self.model)
        t4 = time.perf_counter()
        return {
            **rollout_metrics(drawn, self.cfg.grpo.num_generations), **update,
            "rollout/groups_drawn": len(drawn) // self.cfg.grpo.num_generations,
            "rollout/groups_informative": sum(
                informative(drawn[i : i + self.cfg.grpo.num_generations])
                for i in range(0, len(drawn), self.cfg.grpo.num_generations)
            ),
            "learning_rate": self.cfg.grpo.learning_rate,
            "rollout/generate_s": self.engine.generate_s - gen0, "rollout/agent_s": t1 - t0,
            "rollout/prompt_evaluated": self.engine.prompt_evaluated - evaluated0,
            "rollout/prompt_reused": self.engine.prompt_reused - reused0,
            "advantage_s": t2 - t1, "train_s": t3 - t2, "rollout/adapter_save_s": sync.save_s,
            "rollout/adapter_convert_s": sync.convert_s, "rollout/adapter_load_s": sync.load_s,
            "step_time": t4 - t0,
        }  # fmt: skip

    def log(self, step: int, metrics: dict[str, float]) -> None:
        row = {
            "step": step,
            **{k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in metrics.items()},
        }
        with (self.cfg.output_dir / "log.jsonl").open("a", encoding="utf-8") as f:
            f.write(json.dumps(row) + "\n")
        if self.writer is not None:
            for k, v in metrics.items():
                if isinstance(v, int | float) and not math.isnan(v):
                    self.writer.add_scalar(f"train/{k}", v, step)
            self.writer.flush()

    def save_final(self) -> Path:
        from training.common.export import export_gguf

        final = self.cfg.output_dir / "final"
        merged = self.model.merge_and_unload() if self.cfg.lora.merge else self.model
        merged.save_pretrained(final)
        self.tokenizer.save_pretrained(final)
        run = json.dumps(trained_run_options(self.cfg.env.run), indent=1)
        (final / TRAINED_RUN_FILE).write_text(run + "\n", encoding="utf-8")
        export_gguf(final, self.engine.cache_dir, outtype="q8_0")
        return final


def _progress(step: int, total: int, m: dict[str, float], started: float, done: int) -> str:
    left = (time.perf_counter() - started) / max(1, done) * (total - step)
    return (f"step {step}/{total} · reward {m['reward']:.3f} · F1 {m['episode/f1']:.2f} · valid "
            f"{m['episode/valid_call_rate']:.0%} · groups {m['rollout/groups_informative']} of "
            f"{m['rollout/groups_drawn']} differ in F1 · {m['step_time']:.0f} s (rollouts {m['rollout/agent_s']:.0f}, "
            f"{m['rollout/prompt_evaluated']:,.0f} prompt tokens evaluated; "
            f"update {m['train_s']:.0f}, export {m['rollout/adapter_convert_s'] + m['rollout/adapter_load_s']:.0f})"
            f" · ETA {left / 60:.0f} min")  # fmt: skip


def run_agent_rl(cfg: RLRunConfig, questions: list[TrainingQuestion], backend: Any) -> RLResult:
    """Train ``cfg.grpo.max_steps`` steps from the last checkpoint (when ``cfg.resume``), then save ``final``."""
    g = cfg.grpo
    per_step = g.per_device_train_batch_size // g.num_generations
    if per_step < 1 or g.per_device_train_batch_size % g.num_generations:
        raise ValueError(
            "per_device_train_batch_size must be a multiple of num_generations (questions x rollouts)"
        )
    cfg.output_dir.mkdir(parents=True, exist_ok=True)
    loop = AgentRL(cfg, backend)
    done = checkpoints(cfg.output_dir) if cfg.resume else []
    start, resumed, state = 0, None, {}
    if done:
        state = load_checkpoint(done[-1], loop.model, loop.optimizer)
        start, loop.s_batch, resumed = int(state["step"]), state.get("s_batch"), str(done[-1])
        print(f"resumed from {done[-1]} (step {start} of {g.max_steps})", flush=True)
    stream = QuestionStream(questions, g.seed, drawn=int(state.get("drawn", start * per_step)))
    loop.engine.sync(loop.model)
    began, step = time.perf_counter(), start
    for step in range(start + 1, g.max_steps + 1):
        metrics = loop.step(stream, per_step, step)
        loop.log(step, metrics)
        print(_progress(step, g.max_steps, metrics, began, step - start), flush=True)
        saved = {"s_batch": loop.s_batch, "drawn": stream.drawn}
        if step % g.save_steps == 0 or step == g.max_steps:
            save_checkpoint(cfg.output_dir, step, loop.model, loop.optimizer, saved)
        if g.max_train_minutes is not None and time.perf_counter() - began > g.max_train_minutes * 60:
            save_checkpoint(cfg.output_dir, step, loop.model, loop.optimizer, saved)
            print(
                f"stopped after step {step}: max_train_minutes {g.max_train_minutes} passed (resume continues)"
            )
            break
    loop.engine.close()
    final = loop.save_final()
    return RLResult(output_dir=cfg.output_dir, final_dir=final, global_step=step, resumed_from=resumed,
                    log_path=cfg.output_dir / "log.jsonl")  # fmt: skip
