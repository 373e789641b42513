"""The credit-assignment toy task shared by bench/siras_toy.py and bench/async_rl.py (CPU, offline).

Prompt "Add a and b." (a, b in 0..MAX_DIGIT). The completion is a long scaffold (~60 tokens) — five steps of fixed
text that every sibling writes the same way — with one decisive span, the bullet line "- sum: S"
in the middle (a list marker after a newline: its own chunk for SIRAS's structural chunking); the
final "Answer: S" copies it. Reward 1 iff the answer equals a + b (verifiable).
Siblings therefore share most of their tokens and differ at the decisive span (plus sampling noise
in the scaffold): the case where token credit assignment should matter.

The warm start is a short supervised pass of a tiny Qwen3 (built offline, training.common.tiny) on the
scaffold with the decisive sum right ``correct`` of the time (else a random sum, copied into the
answer), so the model writes the format and is partly competent; RL has to sharpen one span.
"""

from __future__ import annotations

import datetime as dt
import random
from pathlib import Path

import numpy as np
import torch

from training.common.loading import load_model_and_tokenizer
from training.common.tiny import build_tiny_model

MAX_DIGIT = 2  # a, b in 0..2: sums 0..4


def prompt_text(a: int, b: int) -> str:
    return f"Add {a} and {b}.\n"


def completion_text(a: int, b: int, s: int) -> str:
    return (
        "<think>\nStep 1: read the question.\n"
        f"Step 2: the first number a is {a}.\nStep 3: the second number b is {b}.\n"
        f"Step 4: add a and b.\n- sum: {s}\n"
        "Step 5: check the sum and write it down.\n</think>\n\n"
        f"Answer: {s}"
    )


def parse_prompt(p: str) -> tuple[int, int]:
    words = p.split()
    return int(words[1]), int(words[3].rstrip("."))


def score(prompt: str, completion: str) -> float:
    """1.0 iff the text after the last "Answer:" starts with a + b (and no further digit)."""
    a, b = parse_prompt(prompt)
    tail = completion.split("Answer:")[-1].strip() if "Answer:" in completion else ""
    ok = tail[:1] == str(a + b) and (len(tail) == 1 or not tail[1].isdigit())
    return 1.0 if ok else 0.0


def toy_reward(prompts, completions, **kwargs) -> list[float]:
    """TRL reward function over the toy task."""
    return [score(p, c) for p, c in zip(prompts, completions, strict=True)]


def prompts(n: int, seed: int) -> list[str]:
    rng = random.Random(seed)
    return [prompt_text(rng.randint(0, MAX_DIGIT), rng.randint(0, MAX_DIGIT)) for _ in range(n)]


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def build_warm_start(out: Path, seed: int = 0, steps: int = 150, correct: float = 0.3) -> Path:
    """Tiny model + supervised pass on the scaffold (decisive sum right ``correct`` of the time)."""
    if (out / "warm" / "config.json").exists():
        return out / "warm"
    extra = [prompt_text(a, b) + completion_text(a, b, (a + b + 1) % 5) for a in range(3) for b in range(3)]
    base = build_tiny_model(
        out / "base", seed=seed, extra_text=extra, hidden_size=64, intermediate_size=128,
        num_attention_heads=4, num_key_value_heads=2, head_dim=16,
    )  # fmt: skip
    seed_all(seed)
    model, tok = load_model_and_tokenizer(base, dtype=torch.float32)
    tok.padding_side = "right"
    opt = torch.optim.AdamW(model.parameters(), lr=3e-3)
    rng = random.Random(seed)
    model.train()
    for _ in range(steps):
        texts, plen = [], []
        for _ in range(32):
            a, b = rng.randint(0, MAX_DIGIT), rng.randint(0, MAX_DIGIT)
            s = a + b if rng.random() < correct else rng.randint(0, 2 * MAX_DIGIT)
            texts.append(prompt_text(a, b) + completion_text(a, b, s) + tok.eos_token)
            plen.append(len(tok(prompt_text(a, b)).input_ids))
        batch = tok(texts, return_tensors="pt", padding=True)
        labels = batch.input_ids.clone()
        labels[batch.attention_mask == 0] = -100
        for i, n in enumerate(plen):
            labels[i, :n] = -100
        model(**batch, labels=labels).loss.backward()
        opt.step()
        opt.zero_grad()
    tok.padding_side = "left"
    model.save_pretrained(out / "warm")
    tok.save_pretrained(out / "warm")
    return out / "warm"


def seconds_left(out: Path, deadline: str | None, name: str = "deadline") -> float | None:
    """Seconds until ``deadline`` (UTC "HH:MM"; default: the first word of ``<out>/<name>`` if that
    file exists), or None without one. Lets a run queued for the shared bench lock fit its plan to the
    time left when the lock is finally granted."""
    if deadline is None and (out / name).is_file():
        deadline = (out / name).read_text().split()[0]
    if not deadline:
        return None
    now = dt.datetime.now(dt.UTC)
    h, m = (int(x) for x in deadline.split(":"))
    return (now.replace(hour=h, minute=m, second=0, microsecond=0) - now).total_seconds()


def fit_steps(
    wanted: int, seconds: float | None, runs: int, step_s: float, overhead_s: float, floor: int = 5
) -> int:
    """The most steps (<= wanted, >= floor) such that ``runs`` runs of ``overhead_s + steps·step_s``
    fit in ``seconds`` (all of ``wanted`` when there is no limit)."""
    if seconds is None:
        return wanted
    return max(floor, min(wanted, int((seconds / max(runs, 1) - overhead_s) / step_s)))
