"""The shape stage: the student's real shape at random init — update step time, tokens/s and peak
memory per batch shape, sampling tokens/s, SIRAS shaping time alone and overlapped with the next rollout."""

from __future__ import annotations

import time
from typing import Any

import torch
from transformers import Qwen2ForCausalLM

from training.gpu.rollout import sample
from training.gpu.shapes import REAL_BATCHES, TINY_BATCHES, BatchShape, student_config, tiny_config
from training.gpu.siras_overlap import (
    SirasUnavailable,
    load_shaper,
    measure_overlap,
    synthetic_rollouts,
    time_shaping,
)
from training.gpu.step import StepReport, completion_batch, expand_advantages, rl_update


def build(device: torch.device, tiny: bool) -> tuple[Qwen2ForCausalLM, torch.optim.Optimizer]:
    """Random-init model of the real shape (bf16 on CUDA, gradient checkpointing) or the tiny one."""
    torch.manual_seed(0)
    config = tiny_config() if tiny else student_config()
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    model = Qwen2ForCausalLM(config).to(device=device, dtype=dtype)
    if not tiny:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6, fused=device.type == "cuda")
    return model, opt


def time_update(
    model: Qwen2ForCausalLM, opt: torch.optim.Optimizer, shape: BatchShape, repeats: int, deadline: float
) -> dict[str, Any]:
    """One warm-up update then up to ``repeats`` timed ones on random tokens with GRPO-style advantages."""
    device = next(model.parameters()).device
    vocab = model.config.vocab_size
    prompts = torch.randint(0, vocab, (shape.rows, shape.prompt_len), device=device)
    completions = torch.randint(0, vocab, (shape.rows, shape.completion_len), device=device)
    batch = completion_batch(prompts, completions)
    adv = torch.randn(shape.rows, 1, device=device).expand(-1, shape.completion_len)
    adv = expand_advantages(adv, shape.prompt_len)
    rl_update(model, opt, batch, adv, shape.micro_batch, shape.logit_chunk)
    reports: list[StepReport] = []
    while len(reports) < repeats and time.monotonic() < deadline:
        reports.append(rl_update(model, opt, batch, adv, shape.micro_batch, shape.logit_chunk))
    out: dict[str, Any] = {"batch": shape.name, "micro_batch": shape.micro_batch, "logit_chunk": shape.logit_chunk,
                           "full_logits_gib_per_micro_batch": round(shape.full_logits_gib(vocab), 2)}  # fmt: skip
    if reports:
        best = min(reports, key=lambda r: r.step_s)
        out.update(
            best.to_dict(),
            timed_steps=len(reports),
            mean_step_s=sum(r.step_s for r in reports) / len(reports),
        )
    return out


def time_sampling(model: Qwen2ForCausalLM, rows: int, prompt_len: int, new_tokens: int) -> dict[str, Any]:
    device = next(model.parameters()).device
    prompts = torch.randint(0, model.config.vocab_size, (rows, prompt_len), device=device)
    sample(model, prompts, 2)  # warm-up
    roll = sample(model, prompts, new_tokens)
    return {
        "rows": rows,
        "new_tokens": new_tokens,
        "seconds": roll.seconds,
        "tokens_per_s": roll.tokens_per_s,
    }


def siras_stage(
    model: Qwen2ForCausalLM, opt: torch.optim.Optimizer, batches: tuple[BatchShape, ...], rollout_tokens: int,
    deadline: float,
) -> dict[str, Any]:  # fmt: skip
    """SIRAS shaping seconds per batch shape, and the overlap measurement on the first one."""
    try:
        shaper = load_shaper("siras", model.config.vocab_size)
    except SirasUnavailable as exc:
        return {"skipped": str(exc)}
    out: dict[str, Any] = {"shaping_s": {}}
    data = {}
    for shape in batches:
        if time.monotonic() > deadline:
            break
        data[shape.name] = synthetic_rollouts(shape, model.config.vocab_size)
        out["shaping_s"][shape.name] = time_shaping(shaper, data[shape.name])
    first = batches[0]
    if first.name in data and time.monotonic() < deadline:
        out["overlap"] = {"batch": first.name, **measure_overlap(
            model, opt, first, shaper, data[first.name], rollout_tokens, steps=2, deadline=deadline)}  # fmt: skip
    return out


def shape_stage(device: torch.device, tiny: bool, deadline: float) -> dict[str, Any]:
    """Every measurement of the stage, each skipped (and said so) once ``deadline`` has passed."""
    start = time.monotonic()
    model, opt = build(device, tiny)
    batches = TINY_BATCHES if tiny else REAL_BATCHES
    out: dict[str, Any] = {
        "model": "tiny" if tiny else "qwen2.5-0.5b shape (random init)",
        "parameters": sum(p.numel() for p in model.parameters()),
        "dtype": str(next(model.parameters()).dtype), "build_s": time.monotonic() - start, "updates": [],
    }  # fmt: skip
    for shape in batches:
        if time.monotonic() > deadline:
            out["updates"].append({"batch": shape.name, "skipped": "stage time limit"})
            continue
        out["updates"].append(time_update(model, opt, shape, repeats=1 if tiny else 2, deadline=deadline))
    rollout_tokens = 8 if tiny else 128
    if time.monotonic() < deadline:
        out["sampling"] = time_sampling(model, batches[0].rows, batches[0].prompt_len, rollout_tokens)
    out["siras"] = siras_stage(model, opt, batches, rollout_tokens, deadline)
    out["seconds"] = time.monotonic() - start
    return out
