"""Token-level generation with llama.cpp for a trained student served in its training format.

The transformers backend (``eventfold.llm.transformers_backend.HFChatModel``) renders prompts with the
student's own chat template and parses its native ``<tool_call>`` replies with its tokenizer. On a CPU
the model's forward passes in torch (fp32, memory-bound) cost most of an agent run, so the same weights
can be exported to GGUF (``eventfold model export DIR``, llama.cpp's converter) and generated here:
the prompt goes in as the tokenizer's own token ids (never re-tokenized by llama.cpp) and the new ids
come back for the tokenizer to decode and parse — the format the model was trained in, llama.cpp's
speed. Greedy at temperature 0, otherwise seeded sampling (temperature only: no top-k / top-p, as the
torch path). llama.cpp keeps the previous prompt's key/value cache and evaluates only the tokens after
the longest common prefix, so an agent's turns reuse the system prompt, tools and trajectory so far.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from eventfold.extras import MissingExtra
from eventfold.llm.types import LLMError

EXPORT_NAME = "student-{outtype}.gguf"  # written by `eventfold model export` inside the model directory


def exported_gguf(model_dir: Path, outtype: str = "q8_0") -> Path | None:
    """The GGUF exported from ``model_dir`` if it is there and not older than the directory's weights."""
    path = model_dir / EXPORT_NAME.format(outtype=outtype)
    if not path.is_file():
        return None
    weights = [p.stat().st_mtime for p in model_dir.glob("*.safetensors")]
    return path if not weights or path.stat().st_mtime >= max(weights) else None


def token_logprob(logits: Any, token: int) -> float:
    """log softmax(``logits``)[``token``] in float64, for one position's row of logits."""
    import numpy as np

    row = np.asarray(logits, dtype=np.float64)
    top = row.max()
    return float(row[token] - top - np.log(np.exp(row - top).sum()))


class LlamaCppTokenGenerator:
    """``generate(ids, max_new, temperature) -> new ids`` over a GGUF, with prefix reuse."""

    def __init__(
        self, path: Path, *, n_ctx: int = 8192, n_threads: int | None = None, seed: int | None = 0,
        eos_ids: tuple[int, ...] = (), lora_path: Path | None = None,
    ):  # fmt: skip
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - the local extra is part of every install
            raise LLMError(str(MissingExtra("llama_cpp", "local", "serving a student from GGUF"))) from exc
        from eventfold.llm.local_backend import auto_threads

        if not path.is_file():
            raise LLMError(f"student GGUF {path} does not exist (run `eventfold model export`)")
        if lora_path is not None and not lora_path.is_file():
            raise LLMError(f"LoRA adapter GGUF {lora_path} does not exist")
        threads = n_threads or auto_threads()
        started = time.perf_counter()
        # a LoRA adapter (training.common.export.export_lora_gguf) is applied over the base weights, as
        # the RL rollouts serve the policy being trained without merging and re-quantizing it each step
        self._llm = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads, n_threads_batch=threads,
                          seed=seed if seed is not None else 0xFFFFFFFF, verbose=False,
                          lora_path=str(lora_path) if lora_path is not None else None)  # fmt: skip
        self.load_time_s = time.perf_counter() - started
        self.path = path
        self.lora_path = lora_path
        self.n_ctx = n_ctx
        self.seed = seed
        self.eos_ids = set(eos_ids) | {self._llm.token_eos()}
        self.reused_tokens = 0  # prompt tokens taken from the cache instead of evaluated (all calls)

    def generate(
        self, ids: list[int], max_new: int, temperature: float | None, seed: int | None = None,
        logprobs: list[float] | None = None, stop: Callable[[list[int]], bool] | None = None,
    ) -> list[int]:  # fmt: skip
        """New ids after ``ids``, up to an end-of-turn id, ``max_new`` ids or the first for which
        ``stop(new ids)`` holds; with a temperature the sampler is seeded with ``seed`` (default: the
        generator's own), so a caller drawing several samples of one prompt passes one seed per sample.
        ``logprobs``, when given, receives log p(token) of each new id under the model's untempered
        distribution (the logits llama.cpp sampled from; RL's shaping reads them as surprise)."""
        if len(ids) + max_new > self.n_ctx:
            raise LLMError(f"prompt of {len(ids)} tokens + {max_new} new exceeds the context window {self.n_ctx}")
        before = self._llm.n_tokens
        keep = 0
        cached = self._llm.input_ids[:before].tolist()
        while keep < min(len(cached), len(ids) - 1) and cached[keep] == ids[keep]:
            keep += 1
        self.reused_tokens += keep
        if temperature and (seed is not None or self.seed is not None):
            self._llm.set_seed(seed if seed is not None else self.seed)
        out: list[int] = []
        # llama-cpp-python's generate finds the common prefix with its cache itself (reset=True)
        for tok in self._llm.generate(ids, temp=float(temperature or 0.0), top_k=0 if temperature else 1,
                                      top_p=1.0, min_p=0.0, repeat_penalty=1.0):  # fmt: skip
            out.append(int(tok))
            if logprobs is not None:
                logprobs.append(self._last_logprob(int(tok)))
            if tok in self.eos_ids or len(out) >= max_new or (stop is not None and stop(out)):
                break
        return out

    def _last_logprob(self, token: int) -> float:
        """log softmax of the last evaluated position's logits at ``token`` (llama.cpp keeps them for
        its sampler even without ``logits_all``)."""
        import llama_cpp
        import numpy as np

        n = self._llm.n_vocab()
        logits = llama_cpp.llama_get_logits_ith(self._llm._ctx.ctx, -1)
        return token_logprob(np.ctypeslib.as_array(logits, shape=(n,)), token)

    def close(self) -> None:
        """Free the model now (not at interpreter exit, when llama.cpp's bindings may be gone)."""
        llm, self._llm = self._llm, None
        if llm is not None:
            llm.close()
