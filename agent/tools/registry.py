"""Tools with JSON schemas generated from typed signatures, and a registry that never lets a bad
call crash the run: unknown names and invalid arguments come back to the model as tool errors.

A tool is any typed function (`def search(query: str, top_k: int | None = None) -> ToolResult | str`)
whose docstring's first paragraph is the description and whose `Args:` section describes the
parameters. Extra tools (e.g. a web search) are plain functions passed to `ToolRegistry(extra=...)`.

Choices: a tool may name, per parameter, the values valid *right now* (the fold scopes and fold ids
the status line shows, the chunk ids seen so far). `ToolRegistry.specs()` puts them into each spec's
`grammar_parameters` (enums a constrained decoder cannot leave, or a `Pattern` for values too open to
list) and marks a tool without any valid value `available=False`; `parameters` (what the prompt shows)
never changes. A call outside the choices is answered with the valid ones. A tool may also name
optional parameters that are required *right now* (`required`): the grammar then lists them first and
requires them (a constrained decoder writes properties in schema order); and whether it is offered this
turn at all (`ready`). This is the one tool surface for inference, SFT and RL.
"""

from __future__ import annotations

import inspect
import re
import typing
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from agent.llm import ToolSpec
from agent.state import Evidence


class ToolError(Exception):
    """A tool refused a call; the message goes back to the model as the tool result."""


class ToolResult(BaseModel):
    content: str
    evidence: list[Evidence] = Field(default_factory=list)
    final: bool = False  # the run ends after this tool (answer)
    error: bool = False
    data: dict[str, Any] = Field(default_factory=dict)


def _doc_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    head, _, rest = doc.partition("\nArgs:")
    params: dict[str, str] = {}
    current = None
    for line in rest.splitlines():
        m = re.match(r"\s+(\w+)(?:\s*\([^)]*\))?:\s*(.*)", line)
        if m:
            current = m.group(1)
            params[current] = m.group(2).strip()
        elif current and line.strip():
            params[current] += " " + line.strip()
    return " ".join(head.split()), params


def _strip_titles(schema: Any) -> Any:
    """Compact schema for small models: no titles, `X | None` shown as X (null stays accepted)."""
    if isinstance(schema, dict):
        options = schema.get("anyOf")
        if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
            rest = {k: v for k, v in schema.items() if k not in ("anyOf", "default") or v is not None}
            rest.pop("anyOf")
            schema = {**next(o for o in options if o != {"type": "null"}), **rest}
        return {k: _strip_titles(v) for k, v in schema.items() if k != "title"}
    if isinstance(schema, list):
        return [_strip_titles(v) for v in schema]
    return schema


Choices = Callable[[], dict[str, "list[Any] | Pattern"]]


@dataclass(frozen=True)
class Pattern:
    """A choice that is a regular expression the value must match (a JSON-schema `pattern`), for values
    too open to list: "the refused name, then what it did"."""

    regex: str

    def matches(self, value: object) -> bool:
        return isinstance(value, str) and re.fullmatch(self.regex, value) is not None


Required = Callable[[], list[str]]
Ready = Callable[[], bool]
Adapter = Callable[[dict[str, Any]], dict[str, Any]]


def narrowed(parameters: dict[str, Any], choices: dict[str, list[Any] | Pattern]) -> tuple[dict[str, Any], bool]:
    """`parameters` with each chosen property narrowed to an enum of its valid values (a `Pattern`: to a
    string matching it), and whether a valid call exists (False when a required parameter has no valid
    value). An optional array without valid values is dropped from the schema."""
    schema = {**parameters, "properties": dict(parameters.get("properties", {}))}
    required = set(parameters.get("required", []))
    for name, values in choices.items():
        prop = schema["properties"].get(name)
        if prop is None:
            continue
        if isinstance(values, Pattern):
            schema["properties"][name] = {**prop, "type": "string", "pattern": values.regex}
            continue
        if not values:
            if name in required:
                return schema, False
            schema["properties"].pop(name)
            continue
        if prop.get("type") == "array":
            schema["properties"][name] = {**prop, "items": {"enum": list(values)}, "maxItems": 3}
        else:
            schema["properties"][name] = {k: v for k, v in prop.items() if k != "type"} | {"enum": list(values)}
    return schema, True


def required_first(parameters: dict[str, Any], names: Sequence[str]) -> dict[str, Any]:
    """`parameters` with the properties `names` moved first and required (unknown names are ignored)."""
    props = parameters.get("properties", {})
    first = [n for n in names if n in props]
    if not first:
        return parameters
    order = first + [n for n in props if n not in first]
    required = first + [n for n in parameters.get("required", []) if n not in first]
    return {**parameters, "properties": {n: props[n] for n in order}, "required": required}


@dataclass
class Tool:
    name: str
    fn: Callable[..., Any]
    description: str
    args_model: type[BaseModel]
    parameters: dict[str, Any] = field(default_factory=dict)
    choices: Choices | None = None  # valid values per parameter right now
    adapt: Adapter | None = None  # maps other argument shapes (a step range for fold) onto this signature
    enforce_choices: bool = True  # False: choices only narrow the grammar (the tool drops bad values)
    required: Required | None = None  # optional parameters required right now, listed first in the grammar
    ready: Ready | None = None  # False: not offered this turn (`available=False`), whatever its choices

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        name: str | None = None,
        description: str | None = None,
        *,
        choices: Choices | None = None,
        adapt: Adapter | None = None,
        enforce_choices: bool = True,
        required: Required | None = None,
        ready: Ready | None = None,
    ) -> Tool:
        hints = typing.get_type_hints(fn)
        doc, arg_docs = _doc_parts(fn)
        fields: dict[str, Any] = {}
        for pname, param in inspect.signature(fn).parameters.items():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            if pname not in hints:
                raise TypeError(f"tool {fn.__name__}: parameter {pname!r} needs a type annotation")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (hints[pname], Field(default, description=arg_docs.get(pname) or None))
        model = create_model(  # type: ignore[call-overload]
            f"{fn.__name__}_args", __config__=ConfigDict(extra="forbid"), **fields
        )
        schema = _strip_titles(model.model_json_schema())
        schema.pop("additionalProperties", None)
        return cls(name or fn.__name__, fn, description or doc, model, schema, choices, adapt, enforce_choices,
                   required, ready)

    def spec(self) -> ToolSpec:
        spec = ToolSpec(name=self.name, description=self.description, parameters=self.parameters)
        if self.choices is not None:
            spec.grammar_parameters, spec.available = narrowed(self.parameters, self.choices())
        now = self.required() if self.required is not None else []
        if now:
            spec.grammar_parameters = required_first(spec.grammar_parameters or self.parameters, now)
        if self.ready is not None and not self.ready():
            spec.available = False
        return spec

    def check_choices(self, arguments: dict[str, Any]) -> None:
        """Refuse values outside the current choices, naming the valid ones."""
        if self.choices is None or not self.enforce_choices:
            return
        for name, values in self.choices().items():
            given = arguments.get(name)
            if given is None:
                continue
            if isinstance(values, Pattern):
                if not values.matches(given):
                    raise ToolError(f"{name}={given!r} is not valid now; it must match {values.regex!r}")
                continue
            for value in given if isinstance(given, list) else [given]:
                if value not in values:
                    valid = ", ".join(map(repr, values[:12])) if values else "none right now"
                    raise ToolError(f"{name}={value!r} is not valid now; valid {name} values: {valid}")

    def invoke(self, arguments: dict[str, Any]) -> ToolResult:
        if self.adapt is not None:
            arguments = self.adapt(dict(arguments))
        self.check_choices(arguments)
        try:
            args = self.args_model.model_validate(arguments)
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(map(str, e['loc'])) or 'arguments'}: {e['msg']}" for e in exc.errors()[:5]
            )
            raise ToolError(
                f"bad arguments for {self.name}: {problems}. Expected: {self.parameters}"
            ) from exc
        out = self.fn(**{k: getattr(args, k) for k in type(args).model_fields})
        if isinstance(out, ToolResult):
            return out
        return ToolResult(content=str(out))


class ToolRegistry:
    """The tools of one run, by name; `call` turns every failure into an error result."""

    def __init__(
        self, tools: Sequence[Tool | Callable[..., Any]], extra: Sequence[Tool | Callable[..., Any]] = ()
    ):
        self._tools: dict[str, Tool] = {}
        for t in [*tools, *extra]:
            tool = t if isinstance(t, Tool) else Tool.from_function(t)
            if tool.name in self._tools:
                raise ValueError(f"two tools are named {tool.name!r}")
            self._tools[tool.name] = tool

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def specs(self) -> list[ToolSpec]:
        return [t.spec() for t in self._tools.values()]

    def call(self, name: str, arguments: dict[str, Any]) -> ToolResult:
        tool = self._tools.get(name)
        if tool is None:
            return ToolResult(
                content=f"error: unknown tool {name!r}; available tools: {', '.join(self._tools)}", error=True
            )
        try:
            return tool.invoke(arguments)
        except ToolError as exc:
            return ToolResult(content=f"error: {exc}", error=True)
        except Exception as exc:  # a failing backend must not end the run: the model sees the error
            return ToolResult(content=f"error: {name} failed: {type(exc).__name__}: {exc}", error=True)
