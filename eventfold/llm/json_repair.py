"""Parse JSON that a language model wrote, repairing the usual slips once.

Repairs, in order: surrounding prose or Markdown code fences, trailing commas before `}`/`]`,
Python literals (`True`/`False`/`None`), and a truncated object missing its closing brackets.
Nothing is guessed beyond that: if the repaired text still does not parse, `JSONRepairError` says why.
"""

from __future__ import annotations

import json
import re
from typing import Any

_FENCE = re.compile(r"```(?:json|JSON)?\s*(.*?)```", re.DOTALL)
_TRAILING_COMMA = re.compile(r",\s*([}\]])")
_PY_LITERALS = {"True": "true", "False": "false", "None": "null"}


class JSONRepairError(ValueError):
    """The text is not JSON, even after the standard repairs."""


def _outermost(text: str) -> str:
    """The span from the first `{` or `[` to the last matching closer, when the text has prose around it."""
    starts = [i for i in (text.find("{"), text.find("[")) if i >= 0]
    if not starts:
        return text
    start = min(starts)
    closer = "}" if text[start] == "{" else "]"
    end = text.rfind(closer)
    return text[start : end + 1] if end > start else text[start:]


def _replace_py_literals(text: str) -> str:
    out, in_str, escaped = [], False, False
    i = 0
    while i < len(text):
        ch = text[i]
        if in_str:
            out.append(ch)
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            i += 1
            continue
        if ch == '"':
            in_str = True
            out.append(ch)
            i += 1
            continue
        for py, js in _PY_LITERALS.items():
            if text.startswith(py, i) and not (i and (text[i - 1].isalnum() or text[i - 1] == "_")):
                out.append(js)
                i += len(py)
                break
        else:
            out.append(ch)
            i += 1
    return "".join(out)


def _close_truncated(text: str) -> str:
    """Append the closers a truncated object or array is missing (strings are closed too)."""
    stack: list[str] = []
    in_str, escaped = False, False
    for ch in text:
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
        elif ch == '"':
            in_str = True
        elif ch in "{[":
            stack.append("}" if ch == "{" else "]")
        elif ch in "}]" and stack:
            stack.pop()
    tail = '"' if in_str else ""
    return text + tail + "".join(reversed(stack))


def parse_json_lenient(text: str) -> Any:
    """Parse `text` as JSON, applying the repairs above only if plain parsing fails."""
    try:
        return json.loads(text)
    except (json.JSONDecodeError, TypeError):
        pass
    if not isinstance(text, str) or not text.strip():
        raise JSONRepairError("empty output, expected JSON")
    candidate = text.strip()
    fence = _FENCE.search(candidate)
    if fence:
        candidate = fence.group(1).strip()
    candidate = _outermost(candidate)
    candidate = _TRAILING_COMMA.sub(r"\1", candidate)
    candidate = _replace_py_literals(candidate)
    for attempt in (candidate, _TRAILING_COMMA.sub(r"\1", _close_truncated(candidate))):
        try:
            return json.loads(attempt)
        except json.JSONDecodeError as exc:
            last = exc
    raise JSONRepairError(f"not valid JSON after repair ({last.msg} at char {last.pos}): {text[:200]!r}")


def parse_json_object(text: str) -> dict[str, Any]:
    """Like `parse_json_lenient`, but the result must be a JSON object."""
    value = parse_json_lenient(text)
    if not isinstance(value, dict):
        raise JSONRepairError(f"expected a JSON object, got {type(value).__name__}: {text[:200]!r}")
    return value
