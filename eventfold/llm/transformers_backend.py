"""The transformers backend: a Hugging Face causal LM (or just its tokenizer) behind `ChatModel`.

It serves a trained student in `eventfold ask` (``llm.backend = "transformers"``, ``llm.hf_model_dir`` =
the ``final`` folder of `eventfold train sft|rl`) in exactly the format it was trained in: the
tokenizer's own chat template with the agent's tool specs and native ``<tool_call>`` replies (the
llama.cpp backend would instead show the tools as grammar-constrained JSON actions, a format the
student never saw in training). Needs the ``train`` extra (torch, transformers, trl).

Training renders, counts and generates with the policy's own tokenizer and chat template, so the
agent and the RL environment measure context in the tokens the trained model will really see:

- ``count_message_tokens`` applies the tokenizer's chat template (tools included);
- ``chat`` generates with the model (when one is given) and parses tool calls with the tokenizer's
  response parser (``tokenizer.parse_response``, set by TRL's ``add_response_schema`` for its
  bundled templates). Without a model, ``chat`` raises ``LLMError``: a tokenizer-only instance is
  for counting (the RL environment, where TRL generates).
- ``tool_choice="required"`` is kept by decoding, as llama.cpp's grammar and vLLM's guided decoding
  keep it: the reply starts with the template's own tool-call opener (Qwen2.5: ``<tool_call>`` and
  ``{"name": "``, the very tokens the student is trained on, ``call_opener_ids``) and the model writes
  the rest — which tool, its arguments, the end of the call. Without it a small student may end its
  turn at once or write a bare JSON object, and the turn is lost;
- prefix reuse: the key/value cache of the previous prompt is kept, cut to the longest common token
  prefix with the next one and only the rest is evaluated (an agent's turns share the system prompt,
  the tools and the trajectory so far), as llama.cpp does; outputs are the same as without it.

Also here: the conversion of project messages (`eventfold.llm.types.Message`) to the Hugging Face /
TRL chat format.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from typing import Any, Literal

import torch

from eventfold.extras import MissingExtra
from eventfold.llm.gguf_generator import LlamaCppTokenGenerator, exported_gguf
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


_PROBE_TOOL = "zq_probe_tool"


def call_closed(text: str) -> bool:
    """Whether ``text`` (a reply from the tool-call opener on) holds a whole JSON object: its first ``{``
    closed again outside strings. A forced call's generation stops there: whatever the model writes after
    its call is no part of it. The packaged 0.5B student, its output row for the template's closing tag
    barely trained, gave that tag 2e-4 after the call and sampled a random token instead (then its
    end-of-turn), a token RL then trained on at log-prob -9; greedy, it wrote more turns to the length cap."""
    depth, in_string, escaped = 0, False, False
    for ch in text:
        if escaped:
            escaped = False
        elif in_string:
            escaped, in_string = ch == "\\", ch != '"'
        elif ch == '"':
            in_string = depth > 0
        elif ch == "{":
            depth += 1
        elif ch == "}" and depth > 0:
            depth -= 1
            if depth == 0:
                return True
    return False


StopFn = Callable[[list[int]], bool]


class _StopCriterion:
    """transformers' stopping criterion from a predicate over the new ids (one sequence)."""

    def __init__(self, stop: StopFn, prompt_len: int) -> None:
        self.stop, self.prompt_len = stop, prompt_len

    def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
        done = self.stop(input_ids[0, self.prompt_len :].tolist())
        return torch.full((input_ids.shape[0],), done, dtype=torch.bool, device=input_ids.device)


def call_opener_ids(tokenizer: Any) -> list[int]:
    """The token ids a tool call of this chat template starts with, up to the tool's name (Qwen2.5:
    ``<tool_call>``, ``\n``, ``{"name": "``), taken from the template itself and tokenized as training
    tokenizes an assistant turn, so a forced opener is the exact token prefix the model learned; [] when
    the template renders no tool calls."""
    user = [{"role": "user", "content": "q"}]
    tools = [{"type": "function", "function": {"name": _PROBE_TOOL, "description": "d",
                                               "parameters": {"type": "object", "properties": {}}}}]  # fmt: skip
    call = {"role": "assistant", "content": "",
            "tool_calls": [{"type": "function", "function": {"name": _PROBE_TOOL, "arguments": {}}}]}  # fmt: skip
    try:
        head = tokenizer.apply_chat_template(user, tools=tools, tokenize=False, add_generation_prompt=True)
        full = tokenizer.apply_chat_template([*user, call], tools=tools, tokenize=False)
    except Exception:  # a template without tool calls
        return []
    if not full.startswith(head) or _PROBE_TOOL not in full[len(head) :]:
        return []
    turn = full[len(head) :]
    opener = turn[: turn.index(_PROBE_TOOL)]
    ids = tokenizer(turn, add_special_tokens=False)["input_ids"]
    keep = 0  # the longest run of the turn's own tokens that spells a prefix of the opener
    while keep < len(ids) and opener.startswith(tokenizer.decode(ids[: keep + 1], skip_special_tokens=False)):
        keep += 1
    return ids[:keep]


class HFChatModel:
    """`ChatModel` over a transformers tokenizer (+ optional model) with a tool-capable chat template."""

    def __init__(
        self, tokenizer: Any, model: Any | None = None, *, name: str = "hf", max_new_tokens: int = 256,
        reuse_prefix: bool = True, seed: int | None = 0, generator: Any | None = None,
    ):  # fmt: skip
        if getattr(tokenizer, "chat_template", None) is None:
            raise ValueError("the tokenizer has no chat template; it cannot render agent prompts")
        self.tokenizer = tokenizer
        self.model = model
        # instead of the torch model: llama.cpp over the same weights exported to GGUF
        # (eventfold.llm.gguf_generator.LlamaCppTokenGenerator), prompt and reply in the same format
        self.generator = generator
        self.name = name
        self.max_new_tokens = max_new_tokens
        self.reuse_prefix = reuse_prefix
        self.seed = seed
        self._lock = threading.Lock()  # generate is not re-entrant on one model
        self._cache: Any = None  # key/value cache of the last call, and the token ids it covers
        self._cache_ids: list[int] = []
        self._reused_torch = 0
        self._opener: list[int] | None = None  # call_opener_ids, computed on the first required call

    @property
    def reused_tokens(self) -> int:
        """Prompt tokens taken from the key/value cache instead of evaluated (all calls)."""
        return self._reused_torch + (self.generator.reused_tokens if self.generator is not None else 0)

    @classmethod
    def from_settings(cls, llm: Any) -> HFChatModel:
        """The model in ``llm.hf_model_dir`` (a saved HF directory, e.g. a training run's ``final``)."""
        from transformers import AutoModelForCausalLM, AutoTokenizer

        path = llm.hf_model_dir
        if path is None or not (path / "config.json").is_file():
            raise LLMError(f"llm.hf_model_dir {path} is not a saved model directory (config.json missing)")
        if llm.n_threads:
            torch.set_num_threads(llm.n_threads)
        tok = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
        try:
            from trl.chat_template_utils import add_response_schema

            tok = add_response_schema(tok)  # the tool-call parser for the known templates (Qwen2.5 ...)
        except ImportError as exc:
            raise LLMError(str(MissingExtra("trl", "train", "the transformers backend"))) from exc
        name = f"hf:{path.parent.name}/{path.name}"
        gguf = exported_gguf(path) if llm.hf_generate != "torch" else None
        if llm.hf_generate == "llama_cpp" and gguf is None:
            raise LLMError(f"{path} has no current GGUF export: run `eventfold model export {path}`")
        if gguf is not None:  # the same weights through llama.cpp; prompt and reply in the training format
            return cls.over_gguf(tok, gguf, name=f"{name} (llama.cpp {gguf.name})", max_new_tokens=llm.max_tokens,
                                 n_ctx=llm.n_ctx, n_threads=llm.n_threads, seed=llm.seed)  # fmt: skip
        model = AutoModelForCausalLM.from_pretrained(str(path), dtype="auto", local_files_only=True).eval()
        return cls(tok, model, name=name, max_new_tokens=llm.max_tokens, seed=llm.seed)

    @classmethod
    def over_gguf(
        cls, tokenizer: Any, gguf: Any, *, name: str, max_new_tokens: int, n_ctx: int = 8192,
        n_threads: int | None = None, seed: int | None = 0,
    ) -> HFChatModel:  # fmt: skip
        """The student's tokenizer and chat template, generating through llama.cpp over its GGUF export
        (stopping at the tokenizer's EOS or PAD)."""
        eos = tuple(i for i in (tokenizer.eos_token_id, tokenizer.pad_token_id) if i is not None)
        gen = LlamaCppTokenGenerator(gguf, n_ctx=n_ctx, n_threads=n_threads, seed=seed, eos_ids=eos)
        return cls(tokenizer, None, name=name, max_new_tokens=max_new_tokens, seed=seed, generator=gen)

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
        if self.model is None and self.generator is None:
            raise LLMError(f"{self.name}: tokenizer-only model (counting); it cannot generate")
        if json_schema is not None:
            raise LLMError(f"{self.name}: JSON-schema constrained generation is not supported")
        prompt = self.render(messages, tools if tool_choice != "none" else None)
        ids = self.tokenizer(prompt, add_special_tokens=False)["input_ids"]
        forced: list[int] = []
        if tools and tool_choice == "required":
            if self._opener is None:
                self._opener = call_opener_ids(self.tokenizer)
            forced = self._opener
        stop = None
        if forced:  # the call ends where its JSON object closes (``call_closed``)
            stop = lambda out: call_closed(self.tokenizer.decode(forced + out, skip_special_tokens=False))  # noqa: E731
        with self._lock, torch.no_grad():
            reused = self.reused_tokens
            new_ids = self._generate(ids + forced, max_tokens or self.max_new_tokens, temperature, stop)
            evaluated = len(ids) + len(forced) - (self.reused_tokens - reused)
        text = self.tokenizer.decode(forced + new_ids, skip_special_tokens=False)
        message = self._parse(text, prompt)
        usage = Usage(prompt_tokens=len(ids) + len(forced), completion_tokens=len(new_ids), evaluated_prompt_tokens=evaluated)
        eos = self.tokenizer.eos_token_id
        return ChatResponse(
            message=message, usage=usage, model=self.name,
            finish_reason="stop" if new_ids and (new_ids[-1] == eos or (stop is not None and stop(new_ids))) else "length",
        )

    def _generate(
        self, ids: list[int], max_new: int, temperature: float | None, stop: StopFn | None = None
    ) -> list[int]:
        """New token ids after ``ids``, up to the first for which ``stop(new ids)`` holds; with prefix reuse,
        only the tokens after the longest common prefix with the previous call's are evaluated (its cache
        is cut there)."""
        if self.generator is not None:
            return self.generator.generate(ids, max_new, temperature, stop=stop)
        greedy = not temperature
        kw: dict[str, Any] = {}
        if self.reuse_prefix:
            from transformers import DynamicCache

            keep = 0
            if self._cache is not None:
                limit = min(len(ids) - 1, self._cache.get_seq_length(), len(self._cache_ids))
                while keep < limit and self._cache_ids[keep] == ids[keep]:
                    keep += 1
            if keep > 0:
                self._cache.crop(keep - self._cache.get_seq_length())  # negative: tokens to drop
                self._reused_torch += keep
            else:
                self._cache = DynamicCache(config=self.model.config)
            kw["cache"] = self._cache
        if not greedy and self.seed is not None:
            torch.manual_seed(self.seed)
        device = self.model.device
        input_ids = torch.tensor([ids], device=device)
        out = self.model.generate(
            input_ids=input_ids,
            attention_mask=torch.ones_like(input_ids),
            max_new_tokens=max_new,
            do_sample=not greedy,
            temperature=None if greedy else temperature,
            top_p=None,
            top_k=None,
            pad_token_id=self.tokenizer.pad_token_id,
            stopping_criteria=None if stop is None else [_StopCriterion(stop, len(ids))],
            **kw,
        )
        full = out[0].tolist()
        self._cache_ids = full if "cache" in kw else []
        return full[len(ids) :]

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
