"""What a stored property may hold: JSON values (finite floats, string keys), ISO-8601 strings in
``time_start``/``time_end`` (they drive time filters), a string ``name`` (lexical lookup)."""

from __future__ import annotations

import math
import re
from typing import Any

from eventrag.storage.errors import InvalidInput

_ISO_PREFIX = re.compile(r"^[+-]?\d{4}")


def check_json(value: Any, where: str) -> None:
    if value is None or isinstance(value, (str, bool, int)):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: non-finite float {value!r} cannot be stored")
        return
    if isinstance(value, (list, tuple)):
        for v in value:
            check_json(v, where)
        return
    if isinstance(value, dict):
        for k, v in value.items():
            if not isinstance(k, str):
                raise InvalidInput(f"{where}: keys must be strings, got {k!r}")
            check_json(v, where)
        return
    raise InvalidInput(f"{where}: value of type {type(value).__name__} is not JSON-serialisable")


def check_props(props: dict[str, Any]) -> dict[str, Any]:
    for key, value in props.items():
        if not isinstance(key, str) or not key or "\x00" in key:
            raise InvalidInput(f"property keys must be non-empty strings, got {key!r}")
        check_json(value, f"property {key!r}")
    for key in ("time_start", "time_end"):
        value = props.get(key)
        if value is not None and (not isinstance(value, str) or not _ISO_PREFIX.match(value)):
            raise InvalidInput(
                f"property {key!r} must be an ISO-8601 string (e.g. '2024-05-01'), got {value!r}"
            )
    name = props.get("name")
    if name is not None and not isinstance(name, str):
        raise InvalidInput(f"property 'name' must be a string, got {name!r}")
    return props
