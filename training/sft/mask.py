"""The loss-mask check of SFT rows: SFT trains with ``assistant_only_loss`` (and completion-only loss), so
prompts and tool results are never trained; ``assistant_mask_report`` renders rows with the training chat
template and checks the trained tokens hold the completion's calls and nothing of the prompt."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field

from training.sft.data import row_tools


class MaskReport(BaseModel):
    rows: int
    trained_tokens: int
    total_tokens: int
    leaks: list[str] = Field(default_factory=list, description="rows whose trained text holds prompt/tool text")


def assistant_mask_report(rows: Sequence[dict[str, Any]], tokenizer: Any, chat_template: str) -> MaskReport:
    """Render rows with the training chat template; the trained tokens (assistant mask within the
    completion) must hold the completion's tool calls and never a tool result or the prompt's text."""
    trained = total = 0
    leaks: list[str] = []
    for row in rows:
        kw = {"tools": row_tools(row), "chat_template": chat_template, "tokenize": True, "return_dict": True}
        prompt_ids = tokenizer.apply_chat_template(row["prompt"], add_generation_prompt=True, **kw)["input_ids"]
        full = tokenizer.apply_chat_template(
            row["prompt"] + row["completion"], return_assistant_tokens_mask=True, **kw
        )
        ids, mask = full["input_ids"], full["assistant_masks"]
        start = 0
        while start < min(len(prompt_ids), len(ids)) and prompt_ids[start] == ids[start]:
            start += 1
        kept = [t for i, t in enumerate(ids) if mask[i] and i >= start]
        text = tokenizer.decode(kept)
        trained += len(kept)
        total += len(ids)
        calls = [c["function"]["name"] for m in row["completion"] for c in m.get("tool_calls") or []]
        if not kept or any(f'"{name}"' not in text for name in calls):
            leaks.append(f"{row.get('id')}: completion not trained ({text[:80]!r})")
        elif "<tool_response>" in text or any(
            m["content"] and len(m["content"]) > 20 and m["content"][:40] in text for m in row["prompt"]
        ):
            leaks.append(f"{row.get('id')}: prompt or tool text is trained ({text[:80]!r})")
    return MaskReport(rows=len(rows), trained_tokens=trained, total_tokens=total, leaks=leaks)
