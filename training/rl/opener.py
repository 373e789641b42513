"""RL rollouts ask for a tool call the way the agent serves one: each turn starts from the opener.

The agent asks every action turn with ``tool_choice="required"``: llama.cpp's grammar, vLLM's guided
decoding and the transformers backend (``call_opener_ids``) all start the reply with the chat
template's own tool-call opener (Qwen2.5: ``<tool_call>``, ``\\n``, ``{"name": "``) and the model
writes the rest. TRL's multi-turn loop let the policy write anything instead, so RL sampled (and
scored, and trained) turns the served agent never produces: the SFT student ended its turn at once or
wrote a bare JSON object.

:func:`opener_template` gives the generation prompt that opener, so that TRL's prompts (the first
turn) and tool suffixes (every later turn) end with it: the policy samples the tool's name onward, the
opener itself is prompt or masked tool-suffix tokens (never trained: the policy did not choose it),
and TRL's parser reads the call with the rendered context as its prefix. A turn after the episode
ended (the environment's result carries :data:`EPISODE_OVER`) is not forced, so TRL's loop ends when
the policy writes no call, as the agent's run ends on ``answer``.
"""

from __future__ import annotations

import json
from typing import Any

from eventfold.llm.transformers_backend import call_opener_ids

EPISODE_OVER = "[the episode is over: reply without a tool call]"


def opener_text(tokenizer: Any) -> str:
    """The template's tool-call opener as text ('' when the template renders no tool calls)."""
    ids = call_opener_ids(tokenizer)
    return tokenizer.decode(ids, skip_special_tokens=False) if ids else ""


def opener_template(template: str, opener: str) -> str:
    """``template`` whose generation prompt ends with ``opener``, except right after a tool result that
    carries :data:`EPISODE_OVER`. The opener follows whatever the template's own generation prompt
    renders (an empty think block for Qwen3), as it does inside a rendered assistant turn."""
    cond = (
        "add_generation_prompt and not (messages[-1]['role'] == 'tool' and messages[-1]['content'] is string"
        f" and {json.dumps(EPISODE_OVER)} in messages[-1]['content'])"
    )
    return template + "{%- if " + cond + " %}{{- " + json.dumps(opener) + " }}{%- endif %}"


def force_call_opener(trainer: Any, tokenizer: Any) -> str:
    """Make ``trainer`` (TRL's GRPOTrainer with tools) start every turn of its rollouts from the opener;
    returns the opener ('' and nothing changed when the template has none). Only the trainer's
    generation template changes: the tokenizer's own (saved with the model) stays as it was."""
    opener = opener_text(tokenizer)
    if not opener:
        return ""
    if not hasattr(trainer, "chat_template"):
        raise RuntimeError("this TRL version keeps no generation template (chat_template); update force_call_opener")
    base = trainer.chat_template or tokenizer.chat_template
    trainer.chat_template = opener_template(base, opener)
    return opener
