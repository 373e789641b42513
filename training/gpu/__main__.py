"""``python -m training.gpu --mode shape|learn|all --device cuda|cpu [--tiny] --out DIR --minutes M``

Writes ``DIR/results.json`` (environment, the shape stage, the learning stage's summary) and
``DIR/curve.json`` (reward per step of each learning arm). Stages share the ``--minutes`` budget
(shape 55%, learn the rest when both run); each checks its deadline between steps, and results.json is
rewritten after every stage, so a run stopped from outside keeps what finished.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
import warnings
from pathlib import Path
from typing import Any

import torch
import transformers

from training.gpu.learn import learn
from training.gpu.siras_overlap import SirasUnavailable
from training.gpu.timing import shape_stage


def environment(device: torch.device) -> dict[str, Any]:
    env: dict[str, Any] = {"python": platform.python_version(), "torch": torch.__version__,
                           "transformers": transformers.__version__, "device": str(device)}  # fmt: skip
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        env.update(gpu=props.name, gpu_memory_gib=round(props.total_memory / 2**30, 1))
    try:
        import pydantic

        env["pydantic"] = pydantic.VERSION
    except ImportError:
        env["pydantic"] = None
    return env


def learn_stage(device: torch.device, tiny: bool, deadline: float, steps: int | None) -> tuple[dict, dict]:
    """(summary per arm, reward curve per arm); ``{"skipped": why}`` without the project's estimators."""
    n = steps if steps is not None else (3 if tiny else 300)
    prompts, group = (2, 4) if tiny else (8, 8)
    try:
        arms = learn(device, n, prompts, group, deadline)
    except SirasUnavailable as exc:
        return {"skipped": str(exc)}, {}
    summary = {"task": "pick the tool (4 classes, 8-token completions)", "prompts": prompts, "group": group,
               **{m: a.summary() for m, a in arms.items()}}  # fmt: skip
    return summary, {m: a.rewards for m, a in arms.items()}


def main(argv: list[str] | None = None) -> dict[str, Any]:
    ap = argparse.ArgumentParser(prog="python -m training.gpu", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mode", choices=("shape", "learn", "all"), default="all")
    ap.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    ap.add_argument("--tiny", action="store_true", help="tiny model and batches (CPU checks)")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--minutes", type=float, default=8.0, help="time budget of all stages together")
    ap.add_argument(
        "--learn-steps", type=int, default=None, help="steps per learning arm (default 300; 3 tiny)"
    )
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", category=FutureWarning)
    if args.device == "cuda" and not torch.cuda.is_available():
        ap.error("--device cuda: no CUDA device here (use --device cpu --tiny)")
    device = torch.device(args.device)
    start = time.monotonic()
    end = start + 60.0 * args.minutes
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"mode": args.mode, "tiny": args.tiny, "minutes": args.minutes,
                               "environment": environment(device)}  # fmt: skip
    write = lambda: (args.out / "results.json").write_text(json.dumps(results, indent=2))  # noqa: E731
    write()
    if args.mode in ("shape", "all"):
        share = 0.55 if args.mode == "all" else 1.0
        results["shape"] = shape_stage(device, args.tiny, start + share * (end - start))
        write()
    if args.mode in ("learn", "all"):
        results["learn"], curve = learn_stage(device, args.tiny, end, args.learn_steps)
        (args.out / "curve.json").write_text(json.dumps(curve))
    results["elapsed_s"] = time.monotonic() - start
    write()
    print(json.dumps(results, indent=2))
    return results


if __name__ == "__main__":
    main()
