"""How sure a student is of each turn's tool: the probability of each tool name right after the chat
template's tool-call opener, on SFT rows (the prompt as the template renders it).

The served agent starts every action turn from the opener (``<tool_call>``, ``\\n``, ``{"name": "`` for
Qwen2.5), so the first token of the tool's name is the turn's decision. A student can learn a tool's
arguments and not when to call it (``search`` with the query ``all``, fold's only argument, where its
data folds: ``fold`` well below ``search`` on its own training rows); the loss does not show that, these
probabilities do. This report gives them per target tool, for any checkpoint, in a minute on a CPU:

    python -m training.sft.decisions MODEL_DIR SFT_DATA/train.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from training.rl.opener import opener_text
from training.sft.data import row_tools
from training.sft.train import render_turn


class ToolDecision(BaseModel):
    """One target tool over the rows whose completion calls it."""

    tool: str
    rows: int
    mean_prob: dict[str, float]  # per tool name: mean probability of its first token at the opener
    argmax_right: int  # rows where the target's first token is the likeliest of the tool names


def tool_names(row: dict[str, Any]) -> list[str]:
    """The tools offered at ``row``'s turn, in the registry's order (the schema the row was recorded with)."""
    return [t["function"]["name"] for t in row_tools(row)]


def _first_tokens(tokenizer: Any, names: Sequence[str]) -> dict[str, int]:
    ids = {n: tokenizer.encode(n, add_special_tokens=False)[0] for n in names}
    if len(set(ids.values())) < len(ids):
        raise ValueError(f"tool names share a first token under this tokenizer: {ids}")
    return ids


def _target(row: dict[str, Any]) -> str:
    return row["completion"][0]["tool_calls"][0]["function"]["name"]


def _probs(
    model: Any, tokenizer: Any, row: dict[str, Any], opener: str, first: dict[str, int]
) -> dict[str, float]:
    import torch

    text = render_turn(row, tokenizer)[0]  # the prompt exactly as SFT trains on it
    ids = tokenizer(text + opener, return_tensors="pt", add_special_tokens=False).input_ids
    with torch.no_grad():
        logits = model(ids.to(model.device)).logits[0, -1].float()
    p = torch.softmax(logits, -1)
    return {n: float(p[i]) for n, i in first.items()}


def _opener(tokenizer: Any) -> str:
    opener = opener_text(tokenizer)
    if not opener:
        raise ValueError("this chat template renders no tool-call opener: nothing to measure")
    return opener


def tool_probs(model: Any, tokenizer: Any, row: dict[str, Any]) -> dict[str, float]:
    """Probability of each offered tool name's first token right after the opener, at ``row``'s turn."""
    return _probs(model, tokenizer, row, _opener(tokenizer), _first_tokens(tokenizer, tool_names(row)))


def decision_report(model: Any, tokenizer: Any, rows: Sequence[dict[str, Any]]) -> list[ToolDecision]:
    """Per target tool (in the registry's order): rows, mean probability of each name, argmax right."""
    if not rows:
        return []
    names = tool_names(rows[0])
    opener, first = _opener(tokenizer), _first_tokens(tokenizer, names)
    by_tool: dict[str, list[dict[str, float]]] = {}
    for row in rows:
        by_tool.setdefault(_target(row), []).append(_probs(model, tokenizer, row, opener, first))
    out = []
    for tool in sorted(by_tool, key=lambda t: names.index(t) if t in names else len(names)):
        ps = by_tool[tool]
        mean = {n: sum(p[n] for p in ps) / len(ps) for n in names}
        right = sum(max(p, key=p.__getitem__) == tool for p in ps)
        out.append(ToolDecision(tool=tool, rows=len(ps), mean_prob=mean, argmax_right=right))
    return out


def format_report(report: Sequence[ToolDecision]) -> str:
    names = list(report[0].mean_prob) if report else []
    head = "| target | rows | argmax right | " + " | ".join(f"p({n})" for n in names) + " |"
    lines = [head, "|---|---:|---:|" + "---:|" * len(names)]
    for d in report:
        probs = " | ".join(f"{d.mean_prob[n]:.3f}" for n in names)
        lines.append(f"| {d.tool} | {d.rows} | {d.argmax_right} | {probs} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", type=Path, help="a student directory (saved HF model) or a .gguf file")
    ap.add_argument("rows", type=Path, help="SFT rows (train.jsonl of `eventfold train sft-data`)")
    a = ap.parse_args(argv)
    from training.common.loading import load_model_and_tokenizer

    model, tok = load_model_and_tokenizer(a.model, dtype="float32")
    model.eval()
    rows = [json.loads(x) for x in a.rows.read_text(encoding="utf-8").splitlines() if x.strip()]
    print(format_report(decision_report(model, tok, rows)))


if __name__ == "__main__":
    main()
