"""The RL update of one saved step of agent rollouts, replayed three ways: the plain full forward per turn;
the frozen bottom layers computed once per shared prefix (``training.rl.agent_forward.PrefixForward``,
the same gradient); and that plus the backward over each call's positions only (``[grpo] prompt_grad =
false``: the prompt's top-layer keys and values without gradient, an approximation).

    python bench/rl_update.py --model ~/.cache/eventfold/training/sft_workflow/final \\
        --step ~/.cache/eventfold/training/rl_workflow_grpo/rollouts/step-00012.json

``training.rl.agent_run`` saves each step's rollouts (prompt and sampled ids per turn, rewards) under
``<output_dir>/rollouts/``. Every pass starts from the same fresh adapter (LoRA r16 on every linear module
of the top ``--top-layers`` layers, B = 0 as at a run's start, so all compute the first step's gradient)
and makes no optimiser step: the table gives the seconds, the turns and tokens trained, the share of
bottom-layer positions served from the prefix cache, the loss, the gradient norm, the gradient's cosine
to the first mode's (1.0 where the gradient is the same) and the speed ratio. Run it alone.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def load_step(path: Path) -> list:
    from training.rl.agent_rollout import Rollout, SampledTurn
    from training.rl.rewards import EpisodeOutcome, RewardBreakdown

    rows = json.loads(path.read_text(encoding="utf-8"))["rollouts"]
    return [
        Rollout(question=r["group"], outcome=EpisodeOutcome(answer=r["answer"], golds=[]),
                reward=RewardBreakdown(correctness=r["f1"], em=0.0, f1=r["f1"], context_cost=0.0, format=0.0,
                                       total=r["reward"]),
                turns=[SampledTurn(t["prompt_ids"], t["completion_ids"], t["logprobs"]) for t in r["turns"]],
                policy_turns=r["policy_turns"], valid_turns=r["valid_turns"], seconds=0.0)
        for r in rows
    ]  # fmt: skip


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--model", type=Path, required=True, help="the merged student the run started from")
    p.add_argument("--step", type=Path, required=True, help="a rollouts/step-N.json of an agent RL run")
    p.add_argument("--top-layers", type=int, default=4)
    p.add_argument("--method", default="grpo")
    p.add_argument("--no-bf16", action="store_true")
    p.add_argument("--modes", default="plain,prefix,calls", help=f"comma-separated, the first is the baseline: {', '.join(MODES)}")
    args = p.parse_args()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import torch
    from peft import get_peft_model

    from training.common.loading import load_model_and_tokenizer
    from training.config import LoraSection
    from training.rl.advantages import EstimatorContext
    from training.rl.agent_step import policy_update, rollout_advantages
    from training.rl.siras import SirasConfig
    from training.sft.train import peft_config

    model, _ = load_model_and_tokenizer(args.model.expanduser())
    n = model.config.num_hidden_layers
    lora = LoraSection(enabled=True, r=16, alpha=32, layers=list(range(n - args.top_layers, n)),
                       target_modules=["q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"])  # fmt: skip
    model = get_peft_model(model, peft_config(lora))
    rollouts = load_step(args.step.expanduser())
    advs = rollout_advantages(rollouts, args.method, SirasConfig(), EstimatorContext())
    capture = GradCapture([q for q in model.parameters() if q.requires_grad])
    rows = []
    for mode in args.modes.split(","):
        prefix, prompt_grad = MODES[mode][1:]
        t0 = time.perf_counter()
        out = policy_update(model, capture, rollouts, advs, max_grad_norm=1e9, bf16=not args.no_bf16,
                            prefix=prefix, prompt_grad=prompt_grad)  # fmt: skip
        rows.append((MODES[mode][0], time.perf_counter() - t0, out, capture.grad))
    base, exact = rows[0][1], rows[0][3]
    print(f"{args.step.name}: {len(rollouts)} rollouts, load {os.getloadavg()[0]:.2f}\n")
    print("| update | s | turns | tokens | bottom positions cached | top prompt positions cached | loss | grad norm "
          "| grad cosine | speed |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for name, s, out, grad in rows:
        cos = float(torch.nn.functional.cosine_similarity(grad, exact, dim=0))
        top = out.get("train/top_prefix_reused")
        print(
            f"| {name} | {s:.1f} | {out['train/turns']:.0f} | {out['train/tokens']:.0f} | "
            f"{out['train/prefix_reused']:.0%} | {'–' if top is None else f'{top:.0%}'} | {out['loss']:.5f} | "
            f"{out['grad_norm']:.5f} | {cos:.4f} | {base / s:.2f}x |"
        )


MODES = {  # name in the table, prefix cache, gradient through the prompt
    "plain": ("plain forward per turn", False, True),
    "prefix": ("prefix-cached frozen layers", True, True),
    "calls": ("prefix cache + backward on the calls only", True, False),
}


class GradCapture:
    """An optimiser that keeps the gradient it is asked to apply (flattened) and changes nothing."""

    def __init__(self, params: list) -> None:
        self.params, self.grad = params, None

    def zero_grad(self, set_to_none: bool = True) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        self.grad = torch.cat([p.grad.detach().flatten().float() for p in self.params])

if __name__ == "__main__":
    main()
