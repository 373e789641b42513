"""LLM benchmark: packaged-model pull, load time, prompt/generation tokens per second, JSON-action latency.

    python bench/llm.py [--models qwen2.5-coder-0.5b qwen2.5-coder-1.5b] [--threads N] [--gen 64]

Ratios are against baselines measured in the same run: the grammar-constrained action against plain
decoding, a follow-up agent step that reuses the KV cache against the same step from an empty cache,
and each model against the first one listed. Numbers on a shared 2-core machine are noisy.
"""

from __future__ import annotations

import argparse
import os
import time

from rich.console import Console
from rich.table import Table

from eventfold.llm.local_backend import LlamaCppChatModel
from eventfold.llm.types import Message, ToolSpec
from eventfold.models import pull
from eventfold.settings import Settings

PASSAGE = (
    "Acme Robotics was founded in 2003 by Maria Keller in Zurich. In 2009 it opened a plant in Lyon, "
    "and in 2015 it acquired the sensor maker Widgetly, whose founder Tom Reyes joined the board. "
)
TOOLS = [
    ToolSpec(
        name="search",
        description="Search the documents.",
        parameters={"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    ),
    ToolSpec(
        name="answer",
        description="Give the final short answer.",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]},
    ),
    ToolSpec(
        name="fold",
        description="Summarise old steps to save context.",
        parameters={"type": "object", "properties": {"summary": {"type": "string"}}, "required": ["summary"]},
    ),
]


def perf(model: LlamaCppChatModel):  # type: ignore[no-untyped-def]
    import llama_cpp

    return llama_cpp.llama_perf_context(model._llm._ctx.ctx)


def reset_perf(model: LlamaCppChatModel, *, kv: bool) -> None:
    import llama_cpp

    if kv:
        model._llm.reset()
    llama_cpp.llama_perf_context_reset(model._llm._ctx.ctx)


def measure(name: str, settings: Settings, threads: int | None, gen: int) -> dict[str, float]:
    row: dict[str, float] = {}
    started = time.perf_counter()
    path = pull(name, settings.models_dir)
    row["pull_warm_s"] = time.perf_counter() - started
    model = LlamaCppChatModel(path, n_ctx=4096, n_threads=threads, max_tokens=gen)
    row["load_s"] = model.load_time_s
    row["threads"] = model.n_threads

    prompt = [Message(role="user", content=PASSAGE * 6 + "\nWrite a long story about this company.")]
    reset_perf(model, kv=True)
    t = time.perf_counter()
    model.chat(prompt, max_tokens=gen)
    row["plain_s"] = time.perf_counter() - t
    p = perf(model)
    row["prompt_tok_s"] = p.n_p_eval / (p.t_p_eval_ms / 1e3)
    row["gen_tok_s"] = p.n_eval / (p.t_eval_ms / 1e3)
    row["prompt_tokens"] = p.n_p_eval

    step1 = [
        Message(role="system", content="You are a research assistant."),
        Message(role="user", content="Who founded the company that acquired Widgetly?"),
    ]
    reset_perf(model, kv=True)
    t = time.perf_counter()
    first = model.chat(step1, tools=TOOLS, tool_choice="required")
    row["action_s"] = time.perf_counter() - t
    p = perf(model)
    row["action_gen_tok_s"] = p.n_eval / (p.t_eval_ms / 1e3)
    call = first.tool_calls[0]
    step2 = step1 + [
        first.message,
        Message(role="tool", tool_call_id=call.id, name=call.name, content=PASSAGE),
    ]
    reset_perf(model, kv=False)
    t = time.perf_counter()
    model.chat(step2, tools=TOOLS, tool_choice="required")
    row["step_reuse_s"] = time.perf_counter() - t
    row["step_reuse_prompt_evals"] = perf(model).n_p_eval
    reset_perf(model, kv=True)
    t = time.perf_counter()
    model.chat(step2, tools=TOOLS, tool_choice="required")
    row["step_cold_s"] = time.perf_counter() - t
    row["step_cold_prompt_evals"] = perf(model).n_p_eval
    row["action_valid"] = float(call.error is None)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", nargs="+", default=["qwen2.5-coder-0.5b", "qwen2.5-coder-1.5b"])
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: auto)")
    parser.add_argument("--gen", type=int, default=64, help="tokens to generate")
    args = parser.parse_args()
    settings = Settings()
    load = os.getloadavg()[0]
    rows = {name: measure(name, settings, args.threads, args.gen) for name in args.models}
    base = rows[args.models[0]]
    table = Table(title=f"local LLM (llama.cpp, CPU; load average {load:.1f} at start: noisy if > 0)")
    table.add_column("metric")
    for name in args.models:
        table.add_column(name, justify="right")
        if name != args.models[0]:
            table.add_column(f"ratio vs {args.models[0]}", justify="right")
    for metric in base:
        cells = []
        for name in args.models:
            cells.append(f"{rows[name][metric]:.2f}")
            if name != args.models[0]:
                cells.append(f"{rows[name][metric] / base[metric]:.2f}x" if base[metric] else "-")
        table.add_row(metric, *cells)
    table.add_section()
    table.add_row(
        "constrained / plain gen tok/s",
        *_pad([rows[n]["action_gen_tok_s"] / rows[n]["gen_tok_s"] for n in args.models]),
    )
    table.add_row(
        "KV-reuse step / cold step (s)",
        *_pad([rows[n]["step_reuse_s"] / rows[n]["step_cold_s"] for n in args.models]),
    )
    Console(width=160).print(table)


def _pad(ratios: list[float]) -> list[str]:
    cells = []
    for i, r in enumerate(ratios):
        cells.append(f"{r:.2f}x")
        if i:
            cells.append("")
    return cells


if __name__ == "__main__":
    main()
