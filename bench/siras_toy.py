"""Toy verifiable task: GRPO vs SIRAS-GRPO on a tiny model, same seeds and budget (CPU).

    python bench/siras_toy.py [--seeds 0 1 2] [--steps 60] [--threshold 0.5] [--out runs/siras_toy]

Task: the prompt gives two digits; the completion follows a shared scaffold and ends with one
decisive step, e.g. ``<think>\\nStep 1: a is 3.\\nStep 2: b is 4.\\nStep 3: add them.\\n</think>\\n\\n
Answer: 7`` — reward 1 when the answer equals a + b (verifiable), else 0. A tiny Qwen3 (built
offline) is first warm-started by a short supervised pass on the scaffold whose answers are right
only 30% of the time (else random), so it writes the format and is partly competent — RL has to
sharpen the decisive step. Then, from the same warm start per seed, the
same ``SirasGRPOTrainer`` trains with SIRAS off (plain GRPO: one advantage per rollout on every
token) and on. Output: reward curves (PNG: mean over seeds, min–max band), per-run JSON, and a table
of steps to reach ``--threshold`` (moving average over 5 steps). Timing on a shared 2-core
machine is noisy; the per-step times are given for both arms side by side.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.common.loading import load_model_and_tokenizer  # noqa: E402
from training.common.tiny import build_tiny_model  # noqa: E402
from training.rl.siras import SirasConfig  # noqa: E402

LR = 3e-4
MAX_DIGIT = 2  # a, b in 0..2, a + b in 0..4


def TARGET(a: int, b: int) -> int:  # noqa: N802 - the task's answer
    return a + b


def prompt_text(a: int, b: int) -> str:
    return f"Add {a} and {b}.\n"


def completion_text(a: int, b: int, answer: int) -> str:
    return f"<think>\nStep 1: a is {a}.\nStep 2: b is {b}.\nStep 3: add them.\n</think>\n\nAnswer: {answer}"


def reward_fn(prompts, completions, **kwargs) -> list[float]:
    out = []
    for p, c in zip(prompts, completions, strict=True):
        words = p.split()
        a, b = int(words[1]), int(words[3].rstrip("."))
        tail = c.split("Answer:")[-1].strip() if "Answer:" in c else ""
        out.append(
            1.0 if tail[:1] == str(TARGET(a, b)) and (len(tail) == 1 or not tail[1].isdigit()) else 0.0
        )
    return out


def seed_all(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def warm_start(base: Path, out: Path, seed: int, steps: int, correct: float) -> Path:
    """Supervised pass on the scaffold; the answer is right with probability ``correct``, else random."""
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
            p = prompt_text(a, b)
            ans = TARGET(a, b) if rng.random() < correct else rng.randint(0, 2 * MAX_DIGIT)
            texts.append(p + completion_text(a, b, ans) + tok.eos_token)
            plen.append(len(tok(p).input_ids))
        batch = tok(texts, return_tensors="pt", padding=True)
        labels = batch.input_ids.clone()
        labels[batch.attention_mask == 0] = -100
        for i, n in enumerate(plen):
            labels[i, :n] = -100
        loss = model(**batch, labels=labels).loss
        loss.backward()
        opt.step()
        opt.zero_grad()
    tok.padding_side = "left"
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def train_arm(start: Path, out: Path, seed: int, steps: int, siras: SirasConfig) -> dict:
    from datasets import Dataset
    from trl import GRPOConfig

    from training.rl.trainer import SirasGRPOTrainer

    seed_all(seed)
    model, tok = load_model_and_tokenizer(start, dtype=torch.float32)
    rng = random.Random(1000 + seed)
    rows = [
        {"prompt": prompt_text(rng.randint(0, MAX_DIGIT), rng.randint(0, MAX_DIGIT))}
        for _ in range(4 * steps)
    ]
    args = GRPOConfig(
        output_dir=str(out), use_cpu=True, per_device_train_batch_size=64, num_generations=8,
        max_completion_length=40, max_steps=steps, learning_rate=LR, lr_scheduler_type="constant", beta=0.0, temperature=1.0,
        logging_steps=1, report_to=[], save_strategy="no", seed=seed, dataloader_num_workers=0,
        disable_tqdm=True,
    )  # fmt: skip
    trainer = SirasGRPOTrainer(
        model=model, reward_funcs=[reward_fn], args=args, train_dataset=Dataset.from_list(rows),
        processing_class=tok, siras_config=siras,
    )  # fmt: skip
    t0 = time.perf_counter()
    trainer.train()
    wall = time.perf_counter() - t0
    hist = [h for h in trainer.state.log_history if "reward" in h]
    return {
        "reward": [h["reward"] for h in hist],
        "shaping_ms": [h.get("siras/shaping_ms", 0.0) for h in hist],
        "degenerate_frac": [h.get("siras/degenerate_frac", h.get("frac_reward_zero_std", 0.0)) for h in hist],
        "wall_s": wall,
        "step_s": wall / max(1, len(hist)),
    }


def steps_to(curve: list[float], threshold: float, window: int = 5) -> int | None:
    c = np.asarray(curve)
    for i in range(len(c)):
        if c[max(0, i - window + 1) : i + 1].mean() >= threshold and i + 1 >= window:
            return i + 1
    return None


def plot(results: dict, out: Path, threshold: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4))
    for arm, color in (("grpo", "tab:blue"), ("siras", "tab:red")):
        curves = np.array([r["reward"] for r in results[arm].values()])
        x = np.arange(1, curves.shape[1] + 1)
        ax.plot(x, curves.mean(0), color=color, label=f"{arm.upper()} (mean of {len(curves)} seeds)")
        ax.fill_between(x, curves.min(0), curves.max(0), color=color, alpha=0.15)
    ax.axhline(threshold, color="grey", ls="--", lw=0.8)
    ax.set_xlabel("GRPO step")
    ax.set_ylabel("mean reward (accuracy)")
    ax.set_title("Toy add-two-digits task: GRPO vs SIRAS-GRPO (tiny Qwen3, CPU)")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--warm-steps", type=int, default=200)
    ap.add_argument("--threshold", type=float, default=0.7)
    ap.add_argument(
        "--warm-correct", type=float, default=0.3, help="share of right answers in the warm start"
    )
    ap.add_argument("--out", type=Path, default=Path("runs/siras_toy"))
    args = ap.parse_args()
    torch.set_num_threads(1)
    args.out.mkdir(parents=True, exist_ok=True)
    extra = [prompt_text(a, b) + completion_text(a, b, (a * b) % 10) for a in range(5) for b in range(5)]
    results: dict[str, dict[int, dict]] = {"grpo": {}, "siras": {}}
    for seed in args.seeds:
        base = build_tiny_model(
            args.out / f"base{seed}", seed=seed, extra_text=extra, hidden_size=64, intermediate_size=128,
            num_attention_heads=4, num_key_value_heads=2, head_dim=16,
        )  # fmt: skip
        t0 = time.perf_counter()
        start = warm_start(base, args.out / f"warm{seed}", seed, args.warm_steps, args.warm_correct)
        print(f"seed {seed}: warm start {time.perf_counter() - t0:.0f}s", flush=True)
        for arm, cfg in (("grpo", SirasConfig(enabled=False)), ("siras", SirasConfig())):
            r = train_arm(start, args.out / f"{arm}{seed}", seed, args.steps, cfg)
            results[arm][seed] = r
            print(
                f"seed {seed} {arm}: final-5 reward {np.mean(r['reward'][-5:]):.3f}, {r['step_s']:.2f}s/step",
                flush=True,
            )
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    plot(results, args.out / "reward_curves.png", args.threshold)
    print(f"\nsteps to moving-average(5) reward >= {args.threshold} (None = not within {args.steps} steps)")
    print(
        f"{'seed':>6} {'GRPO':>8} {'SIRAS':>8} {'GRPO final5':>12} {'SIRAS final5':>13} {'GRPO s/step':>12} {'SIRAS s/step':>13}"
    )
    for seed in args.seeds:
        g, s = results["grpo"][seed], results["siras"][seed]
        print(
            f"{seed:>6} {steps_to(g['reward'], args.threshold)!s:>8} {steps_to(s['reward'], args.threshold)!s:>8} "
            f"{np.mean(g['reward'][-5:]):>12.3f} {np.mean(s['reward'][-5:]):>13.3f} {g['step_s']:>12.2f} {s['step_s']:>13.2f}"
        )
    mean_shape = np.mean([np.mean(r["shaping_ms"]) for r in results["siras"].values()])
    print(f"mean SIRAS shaping per step: {mean_shape:.1f} ms; curves: {args.out / 'reward_curves.png'}")


if __name__ == "__main__":
    main()
