"""SIRAS shaping cost vs the GRPO step it belongs to (CPU).

    python bench/siras.py [--repeats 5] [--hidden 128 --layers 4] [--skip-step]

Groups of n = 8 / 16 rollouts × 1k / 4k tokens that look like reasoning traces: siblings share a
scaffold (step lines, tool calls, blank lines) and differ in a few decisive segments; log-probs are
low-surprise on the scaffold and high on the divergent tokens. Shaping time is the median over
``--repeats`` calls of ``shape_batch`` after one warm-up call (default config, the same with the numpy DTW
instead of the numba kernel, and the no-clustering / positional ablations); the first call of the
process (numba import + compile, or load from its disk cache) is reported apart;
the baseline is one GRPO optimisation step (policy forward + backward + AdamW step on the same (n, T)
batch) of a small Qwen3 model built offline. Target: ≤ 50 ms for 16 × 4k. Timings on a shared 2-core
machine are noisy; the ratio column is the useful one.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from training.common.loading import load_model_and_tokenizer  # noqa: E402
from training.common.tiny import build_tiny_model, build_tiny_tokenizer  # noqa: E402
from training.rl.siras import SiblingGroup, SirasConfig, StructureMarkers, chunk_starts, dtw, shape_batch  # noqa: E402


def make_group(tok, markers_vocab: int, n: int, length: int, seed: int) -> SiblingGroup:
    """n sibling traces of ~length tokens: a shared scaffold with per-sibling decisive segments."""
    rng = np.random.default_rng(seed)
    steps = []
    for k in range(length // 12 + 8):
        steps.append(f"Step {k + 1}: combine the facts {rng.integers(100)} and {rng.integers(100)}.\n")
        if k % 5 == 4:
            steps.append('\n<tool_call>\n{"name": "search", "arguments": {"q": "fact"}}\n</tool_call>\n\n')
    toks, lps = [], []
    for j in range(n):
        r = np.random.default_rng(seed * 1000 + j)
        lines = list(steps)
        for i in r.choice(len(lines), size=max(2, len(lines) // 10), replace=False):
            lines[i] = (
                f"Decide: {r.integers(10**6)} / {r.integers(10**6)} = {r.integers(10**6)} so answer {j}.\n"
            )
        ids = np.array(tok("".join(lines)).input_ids[: int(length * r.uniform(0.85, 1.0))], dtype=np.int64)
        base = 0.3 + 0.2 * ((ids * 2654435761) % 97) / 97.0  # scaffold: confident, token-dependent
        lp = -(base + r.gamma(1.0, 0.2, ids.size))
        lp[r.random(ids.size) < 0.03] -= 4.0  # occasional surprise peaks
        toks.append(ids)
        lps.append(lp)
    rewards = (np.arange(n) % 3 == 0).astype(float)
    adv = (rewards - rewards.mean()) / (rewards.std() + 1e-4)
    return SiblingGroup(toks, rewards, adv, lps)


def time_shaping(
    group: SiblingGroup, cfg: SirasConfig, markers: StructureMarkers, repeats: int, compiled: bool = True
) -> tuple[float, float]:
    """Median (wall ms, process CPU ms) of shaping one group (``compiled=False``: numpy DTW)."""
    saved = dtw.COMPILED
    dtw.COMPILED = compiled and saved
    try:
        return _time_shaping(group, cfg, markers, repeats)
    finally:
        dtw.COMPILED = saved


def _time_shaping(
    group: SiblingGroup, cfg: SirasConfig, markers: StructureMarkers, repeats: int
) -> tuple[float, float]:
    shape_batch([group], cfg, markers)  # warm-up
    wall, cpu = [], []
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        shape_batch([group], cfg, markers)
        wall.append(time.perf_counter() - t0)
        cpu.append(time.process_time() - c0)
    return statistics.median(wall) * 1000.0, statistics.median(cpu) * 1000.0


def time_grpo_step(model, group: SiblingGroup, pad_id: int) -> float:
    """One GRPO policy step on the batch: forward, token log-probs, clipped-ratio loss, backward, AdamW."""
    t = max(x.size for x in group.token_ids)
    ids = torch.full((len(group.token_ids), t), pad_id, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for i, x in enumerate(group.token_ids):
        ids[i, : x.size] = torch.from_numpy(x)
        mask[i, : x.size] = 1
    adv = torch.tensor(group.advantages, dtype=torch.float32)[:, None]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-6)
    t0 = time.perf_counter()
    logits = model(input_ids=ids, attention_mask=mask).logits[:, :-1].float()
    logp = torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    ratio = torch.exp(logp - logp.detach())
    m = mask[:, 1:].float()
    loss = -(torch.minimum(ratio * adv, ratio.clamp(0.8, 1.28) * adv) * m).sum() / m.sum()
    loss.backward()
    opt.step()
    return (time.perf_counter() - t0) * 1000.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--hidden", type=int, default=128)
    ap.add_argument("--layers", type=int, default=4)
    ap.add_argument("--skip-step", action="store_true", help="skip the GRPO-step baseline")
    args = ap.parse_args()
    tok = build_tiny_tokenizer()
    markers = StructureMarkers.from_tokenizer(tok)
    model = None
    if not args.skip_step:
        d = build_tiny_model(
            Path(tempfile.mkdtemp()) / "small", hidden_size=args.hidden, intermediate_size=4 * args.hidden,
            num_hidden_layers=args.layers, num_attention_heads=4, num_key_value_heads=2, head_dim=args.hidden // 4,
        )  # fmt: skip
        model, _ = load_model_and_tokenizer(d, dtype=torch.float32)
        n_params = sum(p.numel() for p in model.parameters())
    configs = {
        "default": SirasConfig(),
        "numpy DTW": SirasConfig(),
        "no cluster": SirasConfig(cluster=False),
        "positional": SirasConfig(alignment="positional"),
    }
    table = Table(
        title=f"SIRAS shaping vs one GRPO step (CPU, torch threads={torch.get_num_threads()})", width=140
    )
    cols = ("n×T", "chunks", *[f"{k} ms wall/cpu" for k in configs], "GRPO step ms", "shape/step")
    for col in cols:
        table.add_column(col, justify="right")
    first = None
    for n, t in ((8, 1024), (8, 4096), (16, 1024), (16, 4096)):
        g = make_group(tok, len(tok), n, t, seed=n + t)
        if first is None:
            w0, c0 = time.perf_counter(), time.process_time()
            shape_batch([g], SirasConfig(), markers)
            first = ((time.perf_counter() - w0) * 1000.0, (time.process_time() - c0) * 1000.0)
        chunks = np.mean(
            [
                chunk_starts(x, lp, SirasConfig(), markers).sum()
                for x, lp in zip(g.token_ids, g.logprobs, strict=True)
            ]
        )
        ms = {k: time_shaping(g, c, markers, args.repeats, k != "numpy DTW") for k, c in configs.items()}
        step = time_grpo_step(model, g, tok.pad_token_id) if model is not None else float("nan")
        table.add_row(
            f"{n}×{t}", f"{chunks:.0f}", *[f"{w:.0f} / {c:.0f}" for w, c in ms.values()], f"{step:.0f}",
            f"{ms['default'][0] / step:.3f}" if model is not None else "-",
        )  # fmt: skip
    Console(width=160).print(table)
    if model is not None:
        print(f"baseline model: Qwen3 hidden={args.hidden} layers={args.layers} params={n_params / 1e6:.1f}M")
    print("chunks = mean chunks per rollout; cpu = process CPU time (both threads), wall = elapsed")
    print(
        f"first shaping call of the process (8×1024, numba={dtw.COMPILED}: import + compile or cache load): "
        f"{first[0]:.0f} ms wall / {first[1]:.0f} ms cpu (not in the medians)"
    )
    print("target: default shaping ≤ 50 ms at 16 × 4096 (shared 2-core machine: noisy)")


if __name__ == "__main__":
    main()
