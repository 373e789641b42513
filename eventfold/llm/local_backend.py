"""The local backend: llama-cpp-python on a GGUF file, on CPU.

- Tools: small local models do not emit reliable native tool calls, so the tool list is rendered into
  the system prompt and the reply is decoded under a JSON-schema grammar (`eventfold.llm.actions`):
  the model picks exactly one tool and its arguments. `tool_choice="auto"` behaves as "required"
  (give the agent an answer/finish tool); `"none"` gives plain text.
- `json_schema`: the reply is decoded under that schema's grammar; `parsed` holds the object.
- KV-cache reuse: one `Llama` per backend object; llama.cpp keeps the evaluated tokens and only
  evaluates the part of a new prompt after the longest common prefix, so an agent's growing
  trajectory costs only its new tokens. A tool's own call in between (a reader, a fold summary) would
  replace that state, so the states after each call are also kept in RAM (`LlamaRAMCache`,
  `state_cache_mb`): the agent's next turn restores the longest cached prefix instead of re-evaluating
  its whole trajectory. The tool list in the system prompt is one fixed line per
  tool (the grammar carries the argument schemas and the currently valid values), so it never breaks
  the prefix. `Usage.evaluated_prompt_tokens` says how many prompt tokens were really evaluated.
  A lock serialises calls (a `Llama` is not thread-safe).
- Token counts use the model's own tokenizer and its chat template (exact for template-based models).
"""

from __future__ import annotations

import logging
import math
import os
import threading
import time
from collections import OrderedDict
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from eventfold.extras import MissingExtra
from eventfold.llm.actions import action_schema, parse_action, render_action
from eventfold.llm.json_repair import JSONRepairError, parse_json_object
from eventfold.llm.prompts import TOOL_RESULT, schema_instruction, tools_instruction
from eventfold.llm.types import ChatResponse, LLMError, Message, ToolSpec, Usage, prompt_safe_wire

if TYPE_CHECKING:
    from eventfold.settings import LLMSettings

log = logging.getLogger(__name__)
_RAW_ACTIONS_KEPT = 1024


class LlamaCppChatModel:
    """`ChatModel` over a GGUF file through llama-cpp-python (CPU)."""

    def __init__(
        self,
        model_path: str | Path,
        *,
        n_ctx: int = 8192,
        n_threads: int | None = None,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        think: bool = False,
        name: str | None = None,
        state_cache_mb: int = 2048,
    ) -> None:
        path = Path(model_path)
        if not path.is_file():
            raise LLMError(f"GGUF model {path} does not exist (run `eventfold model pull`)")
        try:
            from llama_cpp import Llama
        except ImportError as exc:
            raise LLMError(str(MissingExtra("llama_cpp", "local", "the local backend"))) from exc
        self.name = name or path.stem
        self.model_path = path
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.think = think
        self._lock = threading.Lock()
        self._raw_actions: OrderedDict[str, str] = OrderedDict()
        threads = n_threads or auto_threads()
        started = time.perf_counter()
        self._llm = Llama(
            model_path=str(path),
            n_ctx=n_ctx,
            n_threads=threads,
            n_threads_batch=threads,
            seed=seed if seed is not None else 0xFFFFFFFF,
            verbose=False,
        )
        if state_cache_mb > 0:
            self._llm.set_cache(bounded_state_cache(state_cache_mb << 20))
        self.load_time_s = time.perf_counter() - started
        self.n_ctx = n_ctx
        self.n_threads = threads
        self._formatter = _template_formatter(self._llm)

    @classmethod
    def from_settings(cls, llm: LLMSettings, model_path: Path) -> LlamaCppChatModel:
        return cls(
            model_path,
            n_ctx=llm.n_ctx,
            n_threads=llm.n_threads,
            temperature=llm.temperature,
            max_tokens=llm.max_tokens,
            seed=llm.seed,
        )

    # --- ChatModel ------------------------------------------------------------------------------
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
        if not messages:
            raise LLMError("chat() needs at least one message")
        use_tools = bool(tools) and tool_choice != "none"
        if use_tools and json_schema is not None:
            raise LLMError("the local backend takes tools or json_schema in one call, not both")
        wire = render_for_template(messages, tools if use_tools else None, json_schema, self._raw_actions)
        kwargs: dict[str, Any] = {
            "messages": wire,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.max_tokens,
            "stop": stop or [],
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        schema = action_schema(tools or [], think=self.think) if use_tools else json_schema
        if schema is not None:
            kwargs["response_format"] = {"type": "json_object", "schema": schema}
        raw, usage = self._complete(kwargs)
        choice = raw["choices"][0]
        text = choice["message"].get("content") or ""
        message = Message(role="assistant", content=text)
        parsed = None
        if use_tools:
            call, thought = parse_action(text, tools or [])
            if choice.get("finish_reason") == "length":
                call.error = f"the action was cut off at max_tokens ({text[:120]!r}); send a shorter one"
            with self._lock:
                self._remember(call.id, text)
            message = Message(role="assistant", content=thought, tool_calls=[call])
        elif json_schema is not None:
            try:
                parsed = parse_json_object(text)
            except JSONRepairError as exc:
                log.warning("local structured output did not parse: %s", exc)
        return ChatResponse(
            message=message, usage=usage, finish_reason=choice.get("finish_reason"), model=self.name, parsed=parsed
        )

    def _complete(self, kwargs: dict[str, Any]) -> tuple[dict[str, Any], Usage]:
        """One completion and its usage (prompt tokens evaluated = those not served by the KV cache)."""
        with self._lock:
            before = self._prompt_evals()
            try:
                raw: dict[str, Any] = self._llm.create_chat_completion(**kwargs)  # type: ignore[assignment]
            except ValueError as exc:  # e.g. prompt longer than n_ctx
                raise LLMError(f"local model {self.name}: {exc}") from exc
            after = self._prompt_evals()
        prompt_tokens = raw.get("usage", {}).get("prompt_tokens", 0)
        usage = Usage(
            prompt_tokens=prompt_tokens,
            completion_tokens=raw.get("usage", {}).get("completion_tokens", 0),
            evaluated_prompt_tokens=min(after - before, prompt_tokens) if None not in (before, after) else None,  # type: ignore[operator]
        )
        return raw, usage

    def count_tokens(self, text: str) -> int:
        if not text:
            return 0
        with self._lock:
            return len(self._llm.tokenize(text.encode("utf-8"), add_bos=False, special=True))

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        """Exact for models with a chat template in the GGUF; else the contents plus 4 tokens a message."""
        wire = render_for_template(messages, tools, None, self._raw_actions)
        if self._formatter is None:
            return sum(self.count_tokens(m["content"]) + 4 for m in wire) + 3
        prompt = self._formatter(messages=wire).prompt
        with self._lock:
            return len(self._llm.tokenize(prompt.encode("utf-8"), add_bos=False, special=True))

    # --- internals ------------------------------------------------------------------------------
    def _prompt_evals(self) -> int | None:
        """Prompt tokens llama.cpp has evaluated in this context so far (its perf counter)."""
        try:
            from llama_cpp import llama_cpp as lib

            return int(lib.llama_perf_context(self._llm._ctx.ctx).n_p_eval)
        except Exception:  # an older/newer binding without the counter: unknown
            return None

    def _remember(self, call_id: str, raw: str) -> None:
        self._raw_actions[call_id] = raw
        while len(self._raw_actions) > _RAW_ACTIONS_KEPT:
            self._raw_actions.popitem(last=False)


def bounded_state_cache(capacity_bytes: int) -> Any:
    """A `LlamaRAMCache` bounded by what its states really hold. llama-cpp-python counts only each state's
    llama bytes (the KV cache), but every saved state also copies the logits buffer (`scores`: n_batch x
    vocabulary floats, 311 MB for Qwen2.5's 151,936 tokens), so its own bound let a long benchmark grow
    past the machine's memory."""
    from llama_cpp.llama_cache import LlamaRAMCache

    class BoundedRAMCache(LlamaRAMCache):
        @property
        def cache_size(self) -> int:
            return sum(s.llama_state_size + s.scores.nbytes for s in self.cache_state.values())

    return BoundedRAMCache(capacity_bytes)


def render_for_template(
    messages: list[Message],
    tools: list[ToolSpec] | None,
    json_schema: dict[str, Any] | None,
    raw_actions: dict[str, str] | None = None,
) -> list[dict[str, str]]:
    """Plain role/content messages for any chat template: the tools and the schema go into the system
    prompt, earlier tool calls become their JSON action text (as the model wrote it when `raw_actions`
    knows the call, so llama.cpp can reuse the cached prefix), tool results become user turns."""
    raw_actions = raw_actions or {}
    extra = []
    if tools:
        extra.append(tools_instruction(tools))
    if json_schema is not None:
        extra.append(schema_instruction(json_schema))
    out: list[dict[str, str]] = []
    for m in messages:
        if m.role == "assistant" and m.tool_calls:
            parts = [raw_actions.get(c.id) or render_action(c) for c in m.tool_calls]
            out.append({"role": "assistant", "content": "\n".join(parts)})
        elif m.role == "tool":
            out.append({"role": "user", "content": TOOL_RESULT.format(name=m.name or "tool", content=m.content)})
        else:
            out.append({"role": m.role, "content": m.content})
    if extra:
        addition = "\n\n".join(extra)
        if out and out[0]["role"] == "system":
            out[0] = {"role": "system", "content": f"{out[0]['content']}\n\n{addition}"}
        else:
            out.insert(0, {"role": "system", "content": addition})
    return [prompt_safe_wire(m) for m in out]  # the template adds the real control tokens; content never does


def auto_threads(sample_s: float = 0.25) -> int:
    """Threads for llama.cpp when none are configured: the cores idle right now (sampled from /proc/stat).

    llama.cpp's worker threads spin-wait at barriers; on an oversubscribed machine (2 cores, several
    processes) two threads ran generation ~10x slower than one (measured: 0.5 vs 5 tok/s on the 0.5B),
    while on an idle machine every core helps.
    """
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cpus = os.cpu_count() or 1
    idle = _idle_cores(cpus, sample_s)
    if idle is None:
        idle = cpus - (os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0)
    return max(1, min(cpus, math.floor(idle + 0.5)))


def _idle_cores(cpus: int, sample_s: float) -> float | None:
    def snapshot() -> tuple[int, int]:
        with open("/proc/stat") as fh:
            fields = [int(x) for x in fh.readline().split()[1:]]
        return fields[3] + (fields[4] if len(fields) > 4 else 0), sum(fields)  # idle + iowait, total

    try:
        idle0, total0 = snapshot()
        time.sleep(sample_s)
        idle1, total1 = snapshot()
    except (OSError, ValueError, IndexError):
        return None
    if total1 <= total0:
        return None
    return cpus * (idle1 - idle0) / (total1 - total0)


def _template_formatter(llm: Any) -> Any:
    """The GGUF's own chat template as a formatter (what llama-cpp-python uses for such models)."""
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    meta = llm.metadata or {}
    template = meta.get("tokenizer.chat_template")
    if not template:
        return None

    def token_text(key: str) -> str:
        try:
            return llm._model.token_get_text(int(meta[key]))
        except (KeyError, ValueError, AttributeError):
            return ""

    return Jinja2ChatFormatter(
        template=template,
        eos_token=token_text("tokenizer.ggml.eos_token_id"),
        bos_token=token_text("tokenizer.ggml.bos_token_id"),
    )
