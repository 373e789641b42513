"""A Hugging Face causal LM (or just its tokenizer) behind the project's `ChatModel` protocol.

Training renders, counts and generates with the policy's own tokenizer and chat template, so the
agent and the RL environment measure context in the tokens the trained model will really see:

- ``count_message_tokens`` applies the tokenizer's chat template (tools included);
- ``chat`` generates with the model (when one is given) and parses tool calls with the tokenizer's
  response parser (``tokenizer.parse_response``, set by TRL's ``add_response_schema`` for its
  bundled templates). Without a model, ``chat`` raises ``LLMError``: a tokenizer-only instance is
  for counting (the RL environment, where TRL generates).

Also here: the conversion of project messages (`eventfold.llm.types.Message`) to the Hugging Face /
TRL chat format.
"""

from __future__ import annotations

import json
import threading
from typing import Any, Literal

import torch

from eventfold.llm.types import ChatResponse, LLMError, Message, ToolCall, ToolSpec, Usage
from eventfold.text_safety import neutralize_control_tokens


def hf_message(msg: Message, *, arguments_as_json: bool = False) -> dict[str, Any]:
    """One message in the HF chat-template format (tool-call arguments as a dict, or a JSON string
    when ``arguments_as_json`` — what a datasets/Arrow column needs to keep a uniform schema)."""
    out: dict[str, Any] = {"role": msg.role, "content": neutralize_control_tokens(msg.content)}
    if msg.tool_calls:
        out["tool_calls"] = [
            {
                "type": "function",
                "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.arguments, ensure_ascii=False) if arguments_as_json else c.arguments,
                },
            }
            for c in msg.tool_calls
        ]
    if msg.role == "tool" and msg.name:
        out["name"] = msg.name
    return out


def hf_messages(messages: list[Message], *, arguments_as_json: bool = False) -> list[dict[str, Any]]:
    return [hf_message(m, arguments_as_json=arguments_as_json) for m in messages]


def hf_tools(tools: list[ToolSpec] | None) -> list[dict[str, Any]] | None:
    return [t.to_openai() for t in tools] if tools else None


class HFChatModel:
    """`ChatModel` over a transformers tokenizer (+ optional model) with a tool-capable chat template."""

    def __init__(self, tokenizer: Any, model: Any | None = None, *, name: str = "hf", max_new_tokens: int = 256):
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("the tokenizer has no chat template; it cannot render agent prompts")
        self.tokenizer = tokenizer
        self.model = model
        self.name = name
        self.max_new_tokens = max_new_tokens
        self._lock = threading.Lock()  # generate is not re-entrant on one model

    # --- counting -------------------------------------------------------------------------------
    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def render(self, messages: list[Message], tools: list[ToolSpec] | None = None, *, generation: bool = True) -> str:
        return self.tokenizer.apply_chat_template(
            hf_messages(messages), tools=hf_tools(tools), tokenize=False, add_generation_prompt=generation
        )

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        return self.count_tokens(self.render(messages, tools))

    # --- generation -----------------------------------------------------------------------------
    def chat(
        self,
        messages: list[Message],
        *,
        tools: list[ToolSpec] | None = None,
        tool_choice: Literal["auto", "required", "none"] = "auto",
        json_schema: dict[str, Any] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        stop: list[str] | None = None,
    ) -> ChatResponse:
        if self.model is None:
            raise LLMError(f"{self.name}: tokenizer-only model (counting); it cannot generate")
        if json_schema is not None:
            raise LLMError(f"{self.name}: JSON-schema constrained generation is not supported")
        prompt = self.render(messages, tools if tool_choice != "none" else None)
        enc = self.tokenizer(prompt, return_tensors="pt", add_special_tokens=False)
        greedy = not temperature
        with self._lock, torch.no_grad():
            out = self.model.generate(
                **enc.to(self.model.device),
                max_new_tokens=max_tokens or self.max_new_tokens,
                do_sample=not greedy,
                temperature=None if greedy else temperature,
                top_p=None,
                top_k=None,
                pad_token_id=self.tokenizer.pad_token_id,
            )
        new_ids = out[0, enc["input_ids"].shape[1] :].tolist()
        text = self.tokenizer.decode(new_ids, skip_special_tokens=False)
        message = self._parse(text, prompt)
        usage = Usage(prompt_tokens=int(enc["input_ids"].shape[1]), completion_tokens=len(new_ids))
        eos = self.tokenizer.eos_token_id
        return ChatResponse(
            message=message, usage=usage, model=self.name,
            finish_reason="stop" if new_ids and new_ids[-1] == eos else "length",
        )

    def _parse(self, text: str, prompt: str) -> Message:
        calls: list[ToolCall] = []
        content = text
        parser = getattr(self.tokenizer, "parse_response", None)
        if parser is not None and (
            getattr(self.tokenizer, "response_template", None) is not None
            or getattr(self.tokenizer, "response_schema", None) is not None
        ):
            try:
                parsed = parser(text, prefix=prompt)
                content = parsed.get("content") or ""
                for i, tc in enumerate(parsed.get("tool_calls") or []):
                    fn = tc.get("function", tc)
                    args = fn.get("arguments") or {}
                    if isinstance(args, str):
                        try:
                            args = json.loads(args)
                        except json.JSONDecodeError:
                            calls.append(ToolCall(id=f"call_{i}", name=str(fn.get("name", "")), error="bad JSON"))
                            continue
                    calls.append(ToolCall(id=f"call_{i}", name=str(fn.get("name", "")), arguments=dict(args)))
            except Exception:  # malformed output: keep the raw text, no calls (the agent repairs or flags it)
                content = text
        for special in (self.tokenizer.eos_token, self.tokenizer.pad_token):
            if special:
                content = content.replace(special, "")
        return Message(role="assistant", content=content.strip(), tool_calls=calls)
