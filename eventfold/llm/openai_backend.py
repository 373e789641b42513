"""The OpenAI-compatible chat backend: vLLM, OpenAI, a llama.cpp server, ... behind one base URL.

- Retries: the SDK's own are off; `eventfold.llm.retry` retries 429/5xx/408/connection errors/timeouts
  with exponential backoff and full jitter, then raises `LLMError`.
- Concurrency: at most `concurrency` requests of one client instance are in flight (a semaphore).
- Tools: native tool calling; each call's arguments are parsed, repaired once if needed, and otherwise
  returned as a `ToolCall` with `error` set so the agent can show the model its mistake.
- Structured output: `response_format={"type": "json_schema", ...}`; if the server rejects it, the
  client falls back (and remembers) to `json_object` carrying the schema (llama.cpp's server,
  `python -m llama_cpp.server`, constrains decoding to it), then plain `json_object`, both with the
  schema in the prompt, then to the prompt only. A rejection is a 400/422 about the format, or a 5xx
  whose body names `response_format` (llama_cpp.server answers an unknown format type with a 500
  validation error): never retried, since the same request would fail the same way.
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
from typing import TYPE_CHECKING, Any, Literal

from eventfold.llm.json_repair import JSONRepairError, parse_json_lenient, parse_json_object
from eventfold.llm.prompts import schema_instruction
from eventfold.llm.retry import call_with_retries, is_retryable
from eventfold.llm.token_count import count_messages, text_counter
from eventfold.llm.types import (
    ChatResponse,
    LLMConnectionError,
    LLMError,
    Message,
    ToolCall,
    ToolSpec,
    Usage,
    prompt_safe_wire,
)
from eventfold.text_safety import mask_secrets, mask_url

if TYPE_CHECKING:
    from eventfold.settings import LLMSettings

log = logging.getLogger(__name__)

_STRUCTURED_MODES = ("json_schema", "json_object_schema", "json_object", "prompt")


class OpenAIChatModel:
    """`ChatModel` over any OpenAI-compatible `/chat/completions` endpoint."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        max_retries: int = 4,
        concurrency: int = 4,
        temperature: float = 0.0,
        max_tokens: int = 512,
        seed: int | None = 0,
        backoff_base_s: float = 0.5,
        backoff_max_s: float = 20.0,
    ) -> None:
        import openai

        self.name = model
        self.model = model
        self.base_url = base_url
        self._where = mask_url(base_url)  # for messages: never the credentials of a user:pass@ URL
        self._secrets = [api_key]
        self.max_retries = max_retries
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.backoff_base_s = backoff_base_s
        self.backoff_max_s = backoff_max_s
        self._client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "not-needed", timeout=timeout_s, max_retries=0
        )
        self._slots = threading.BoundedSemaphore(concurrency)
        self._structured_mode = "json_schema"  # downgraded once if the server rejects it
        self._count = text_counter(model)

    @classmethod
    def from_settings(cls, llm: LLMSettings) -> OpenAIChatModel:
        if not llm.base_url:
            raise LLMError("the openai backend needs llm.base_url (EVENTFOLD_LLM__BASE_URL)")
        return cls(
            llm.base_url,
            llm.model,
            api_key=llm.api_key.get_secret_value() if llm.api_key else None,
            timeout_s=llm.timeout_s,
            max_retries=llm.max_retries,
            concurrency=llm.concurrency,
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
        wire = [prompt_safe_wire(m.to_openai()) for m in messages]
        kwargs: dict[str, Any] = {
            "model": self.model,
            "temperature": self.temperature if temperature is None else temperature,
            "max_tokens": max_tokens or self.max_tokens,
        }
        if self.seed is not None:
            kwargs["seed"] = self.seed
        if stop:
            kwargs["stop"] = stop
        if tools and tool_choice != "none":
            # a tool with no valid call now (`available` False) is not sent: the API has no grammar to hold it
            kwargs["tools"] = [t.to_openai() for t in ([t for t in tools if t.available] or tools)]
            kwargs["tool_choice"] = tool_choice
        if json_schema is None:
            raw = self._request({**kwargs, "messages": wire})
        else:
            raw = self._structured_request(kwargs, wire, json_schema)
        response = self._to_response(raw, tools, json_schema)
        if raw.usage is None:  # some servers omit usage: count it ourselves
            response.usage = Usage(
                prompt_tokens=self.count_message_tokens(messages, tools),
                completion_tokens=self._count(response.text),
            )
        return response

    def count_tokens(self, text: str) -> int:
        return self._count(text)

    def count_message_tokens(self, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
        return count_messages(self._count, messages, tools)

    # --- internals ------------------------------------------------------------------------------
    def _masked(self, text: str) -> str:
        return mask_secrets(text, self._secrets)

    def _request(self, kwargs: dict[str, Any], *, pass_bad_request: bool = False) -> Any:
        """`pass_bad_request`: a structured attempt; a rejection of its format is raised unretried (the
        caller downgrades), other errors as usual."""
        import openai

        def once() -> Any:
            return self._client.chat.completions.create(**kwargs)

        def retryable(exc: BaseException) -> bool:
            return is_retryable(exc) and not (pass_bad_request and _rejects_format(exc))

        with self._slots:
            try:
                return call_with_retries(
                    once,
                    max_retries=self.max_retries,
                    base_delay_s=self.backoff_base_s,
                    max_delay_s=self.backoff_max_s,
                    retryable=retryable,
                    what=f"chat completion ({self.model} at {self._where})",
                )
            except openai.OpenAIError as exc:
                if pass_bad_request and _rejects_format(exc):
                    raise  # the caller downgrades structured output
                if isinstance(exc, openai.BadRequestError):
                    raise LLMError(self._masked(f"chat completion rejected by {self._where}: {exc}")) from exc
                if isinstance(exc, _unreachable_errors()):
                    raise LLMConnectionError(self._masked(
                        f"chat completion failed at {self._where}: {type(exc).__name__}: {exc}")) from exc
                raise LLMError(self._masked(f"chat completion failed at {self._where}: {type(exc).__name__}: {exc}")) from exc

    def _structured_request(self, kwargs: dict[str, Any], wire: list[dict[str, Any]], schema: dict[str, Any]) -> Any:
        import openai

        start = _STRUCTURED_MODES.index(self._structured_mode)
        for mode in _STRUCTURED_MODES[start:]:
            attempt = dict(kwargs)
            messages = wire
            if mode == "json_schema":
                attempt["response_format"] = {
                    "type": "json_schema",
                    "json_schema": {"name": "response", "schema": schema},
                }
            else:
                messages = _with_schema_prompt(wire, schema)
                if mode == "json_object_schema":
                    attempt["response_format"] = {"type": "json_object", "schema": schema}
                elif mode == "json_object":
                    attempt["response_format"] = {"type": "json_object"}
            try:
                raw = self._request({**attempt, "messages": messages}, pass_bad_request=mode != "prompt")
            except openai.APIStatusError as exc:
                if not _rejects_format(exc):
                    raise LLMError(self._masked(f"chat completion rejected by {self._where}: {exc}")) from exc
                log.warning("server rejected response_format=%s (%s); falling back", mode, self._masked(str(exc))[:200])
                continue
            self._structured_mode = mode
            return raw
        raise AssertionError("unreachable")

    def _to_response(self, raw: Any, tools: list[ToolSpec] | None, schema: dict[str, Any] | None) -> ChatResponse:
        if not getattr(raw, "choices", None):
            raise LLMError(f"server at {self._where} returned no choices")
        choice = raw.choices[0]
        msg = choice.message
        text = msg.content or ""
        known = {t.name for t in tools or []}
        calls = [_parse_tool_call(c, known) for c in (msg.tool_calls or [])]
        parsed = None
        if schema is not None:
            try:
                parsed = parse_json_object(text)
            except JSONRepairError as exc:
                log.warning("structured output did not parse: %s", exc)
        usage = Usage()
        if raw.usage is not None:
            usage = Usage(prompt_tokens=raw.usage.prompt_tokens or 0, completion_tokens=raw.usage.completion_tokens or 0)
        return ChatResponse(
            message=Message(role="assistant", content=text, tool_calls=calls),
            usage=usage,
            finish_reason=choice.finish_reason,
            model=raw.model or self.model,
            parsed=parsed,
        )


def _unreachable_errors() -> tuple[type[BaseException], ...]:
    import openai

    return (openai.APIConnectionError, openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


_FORMAT_HINTS = ("response_format", "json_schema", "json_object", "schema", "structured", "guided", "grammar",
                 "not supported", "unsupported", "not implemented")


def _rejects_format(exc: BaseException) -> bool:
    """Whether an error status is the server refusing the requested output format (not, say, an
    over-long prompt): a 400/422 naming the format, or a 5xx whose body names `response_format`."""
    status = getattr(exc, "status_code", None)
    text = str(exc).lower()
    if "context length" in text or "maximum context" in text:
        return False
    if status in (400, 422):
        return any(hint in text for hint in _FORMAT_HINTS)
    return status is not None and status >= 500 and "response_format" in text


def _with_schema_prompt(wire: list[dict[str, Any]], schema: dict[str, Any]) -> list[dict[str, Any]]:
    instruction = schema_instruction(schema)
    out = [dict(m) for m in wire]
    if out and out[0]["role"] == "system":
        out[0]["content"] = f"{out[0]['content']}\n\n{instruction}"
    else:
        out.insert(0, {"role": "system", "content": instruction})
    return out


def _parse_tool_call(call: Any, known: set[str]) -> ToolCall:
    fn = call.function
    name = fn.name or ""
    call_id = call.id or f"call_{uuid.uuid4().hex[:12]}"
    raw_args = fn.arguments or "{}"
    error = None
    arguments: dict[str, Any] = {}
    try:
        value = raw_args if isinstance(raw_args, dict) else parse_json_lenient(raw_args)
        if not isinstance(value, dict):
            raise JSONRepairError(f"arguments must be a JSON object, got {type(value).__name__}")
        arguments = value
    except JSONRepairError as exc:
        error = f"the arguments of {name!r} are not valid JSON ({exc}); send them again as one JSON object"
    if known and name not in known:
        error = f"unknown tool {name!r}; available tools: {', '.join(sorted(known))}"
    if error:
        log.info("unusable tool call: %s (raw arguments %s)", error, json.dumps(raw_args)[:200])
    return ToolCall(id=call_id, name=name, arguments=arguments, error=error)
