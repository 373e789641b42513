"""RL rollouts through llama.cpp, the engine `ask` serves with: the base GGUF plus the current LoRA adapter.

On a CPU, Hugging Face ``generate`` of the 0.5B student in fp32 runs at a few tokens per second and was
nearly all of an RL step. llama.cpp generates the same model several times faster, so each step the
trainer's LoRA adapter is saved (peft), converted to a GGUF adapter with llama.cpp's own converter
(``training.common.export.export_lora_gguf``) and applied over the unchanged base GGUF; nothing is merged
or re-quantized. The loss still needs torch's log-probs of the sampled tokens: ``logprob_gap`` measures how
far llama.cpp's and torch's log-probs of the same tokens lie apart, so a run can check that the rollout
engine samples from the policy the loss differentiates.

``AdapterSync`` keeps the time of each part (save, convert, load) so a step's cost can be broken down.
"""

from __future__ import annotations

import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eventfold.llm.gguf_generator import LlamaCppTokenGenerator, token_logprob
from training.common.export import export_lora_gguf


@dataclass
class AdapterSync:
    """One export of the trainer's adapter into the rollout engine, timed by part (seconds)."""

    version: int
    adapter_gguf: Path
    save_s: float
    convert_s: float
    load_s: float

    @property
    def total_s(self) -> float:
        return self.save_s + self.convert_s + self.load_s


@dataclass
class LoraRolloutEngine:
    """``generate(ids, max_new, temperature) -> new ids`` with the policy as of the last ``sync``.

    ``base_gguf`` is the student's base weights as llama.cpp loads them, ``base_dir`` the saved HF
    directory of the same weights (the converter reads its config), ``work_dir`` holds one adapter per
    version (only the newest ``keep`` are kept)."""

    base_gguf: Path
    base_dir: Path
    cache_dir: Path
    work_dir: Path
    n_ctx: int = 4096
    n_threads: int | None = None
    eos_ids: tuple[int, ...] = ()
    seed: int | None = 0
    keep: int = 2
    syncs: list[AdapterSync] = field(default_factory=list)
    calls: int = 0
    generate_s: float = 0.0  # time in generate since the engine was made
    generated_tokens: int = 0
    # prompt tokens llama.cpp evaluated, and those it served from its cache (the shared prefix with the
    # previous call): a turn's prefill, beside its sampled tokens, is where rollout time goes
    prompt_evaluated: int = 0
    prompt_reused: int = 0
    _generator: LlamaCppTokenGenerator | None = None

    def sync(self, peft_model: Any) -> AdapterSync:
        """Export ``peft_model``'s current adapter and serve it from now on."""
        version = len(self.syncs) + 1
        folder = self.work_dir / f"adapter-{version:05d}"
        t0 = time.perf_counter()
        peft_model.save_pretrained(str(folder))
        t1 = time.perf_counter()
        gguf = export_lora_gguf(folder, self.base_dir, self.cache_dir)
        t2 = time.perf_counter()
        self.close()
        self._generator = LlamaCppTokenGenerator(
            self.base_gguf, n_ctx=self.n_ctx, n_threads=self.n_threads, seed=self.seed,
            eos_ids=self.eos_ids, lora_path=gguf,
        )  # fmt: skip
        t3 = time.perf_counter()
        done = AdapterSync(version, gguf, t1 - t0, t2 - t1, t3 - t2)
        self.syncs.append(done)
        self._prune()
        return done

    def generate(
        self, ids: list[int], max_new: int, temperature: float | None, logprobs: list[float] | None = None,
        stop: Callable[[list[int]], bool] | None = None,
    ) -> list[int]:  # fmt: skip
        """One sample; every call draws with its own seed (siblings of one prompt must differ);
        ``logprobs`` receives the sampled ids' log-probs (``LlamaCppTokenGenerator.generate``)."""
        if self._generator is None:
            raise RuntimeError("LoraRolloutEngine.generate before the first sync(model)")
        self.calls += 1
        seed = None if self.seed is None else self.seed + self.calls
        t0 = time.perf_counter()
        reused = self._generator.reused_tokens
        out = self._generator.generate(ids, max_new, temperature, seed=seed, logprobs=logprobs, stop=stop)
        self.generate_s += time.perf_counter() - t0
        self.generated_tokens += len(out)
        kept = self._generator.reused_tokens - reused
        self.prompt_reused += kept
        self.prompt_evaluated += len(ids) - kept
        return out

    def close(self) -> None:
        if self._generator is not None:
            self._generator.close()
            self._generator = None

    def _prune(self) -> None:
        versions = sorted(self.work_dir.glob("adapter-*"))
        for old in versions[: max(0, len(versions) - self.keep)]:
            shutil.rmtree(old, ignore_errors=True)


@dataclass
class LogprobGap:
    """How far llama.cpp's log-probs of the sampled tokens lie from torch's (nats)."""

    tokens: int
    max_abs: float
    mean_abs: float


def llama_token_logprobs(
    base_gguf: Path, ids: list[int], start: int, *, lora_gguf: Path | None = None, n_threads: int | None = None
) -> list[float]:
    """log p(ids[t] | ids[:t]) for t in [start, len(ids)) under llama.cpp (its own context, all logits kept)."""
    import numpy as np
    from llama_cpp import Llama

    llm = Llama(model_path=str(base_gguf), n_ctx=len(ids) + 8, logits_all=True, verbose=False,
                n_threads=n_threads or 1, lora_path=str(lora_gguf) if lora_gguf else None)  # fmt: skip
    try:
        llm.eval(ids)
        logits = np.asarray(llm.scores[: len(ids)], dtype=np.float64)
    finally:
        llm.close()
    return [token_logprob(logits[t - 1], ids[t]) for t in range(max(start, 1), len(ids))]


def torch_token_logprobs(model: Any, ids: list[int], start: int) -> list[float]:
    """The same log-probs under the torch model (with its adapter), as the loss computes them."""
    import torch

    with torch.no_grad():
        logits = model(torch.tensor([ids])).logits[0].double()
    logp = torch.log_softmax(logits[:-1], dim=-1)
    target = torch.tensor(ids[1:])
    picked = logp.gather(1, target[:, None])[:, 0]
    return picked[max(start, 1) - 1 :].tolist()


def logprob_gap(model: Any, ids: list[int], start: int, base_gguf: Path, lora_gguf: Path | None) -> LogprobGap:
    ours = llama_token_logprobs(base_gguf, ids, start, lora_gguf=lora_gguf)
    theirs = torch_token_logprobs(model, ids, start)
    diffs = [abs(a - b) for a, b in zip(ours, theirs, strict=True)]
    return LogprobGap(len(diffs), max(diffs, default=0.0), sum(diffs) / max(1, len(diffs)))


def attach_llama_rollouts(trainer: Any, model_dir: Path, cache_dir: Path, *, n_ctx: int) -> LoraRolloutEngine:
    """Make ``trainer`` (a ``SirasGRPOTrainer`` over a peft LoRA model) generate its rollouts through
    llama.cpp: the base weights of ``model_dir`` exported to GGUF once (q8_0, as `ask --model` serves a
    student), the adapter exported at every optimiser step."""
    from training.common.export import export_gguf

    peft_cfg = getattr(trainer.model, "peft_config", None)
    if not peft_cfg:
        raise ValueError("llama_cpp rollouts apply a LoRA adapter over the base GGUF: set [lora] enabled = true")
    for cfg in peft_cfg.values():
        if getattr(cfg, "modules_to_save", None):
            raise ValueError(
                "llama_cpp rollouts need a pure LoRA adapter: llama.cpp's LoRA converter cannot carry "
                f"modules_to_save {sorted(cfg.modules_to_save)}; drop [lora] modules_to_save"
            )
    base_gguf = export_gguf(model_dir, cache_dir, outtype="q8_0")
    engine = LoraRolloutEngine(
        base_gguf, model_dir, cache_dir, Path(trainer.args.output_dir) / "rollout_adapters", n_ctx=n_ctx,
        eos_ids=tuple(trainer.eos_token_ids), seed=trainer.args.seed,
    )  # fmt: skip
    trainer.rollout_engine = engine
    return engine
