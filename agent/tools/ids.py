"""Chunk and fold ids as models write them: `[c:ID]`, `c:ID`, `"ID"`, `f1` -> the plain id."""

from __future__ import annotations

from typing import Any


def plain_chunk_id(raw: object) -> str:
    cid = str(raw).strip().strip("[]").strip()
    return cid[2:].strip() if cid.startswith("c:") else cid


def clean_citations(ids: list[Any]) -> list[str]:
    out: list[str] = []
    for raw in ids:
        cid = plain_chunk_id(raw)
        if cid and cid not in out:
            out.append(cid)
    return out


def adapt_ids(*names: str, fold: bool = False) -> Any:
    """An argument adapter that normalises the id-valued arguments `names` (lists too)."""

    def norm(value: object) -> object:
        if not isinstance(value, str):
            return value
        return value.strip().strip("[]").upper() if fold else plain_chunk_id(value)

    def adapt(args: dict[str, Any]) -> dict[str, Any]:
        for name in names:
            value = args.get(name)
            if isinstance(value, list):
                args[name] = [norm(v) for v in value]
            elif value is not None:
                args[name] = norm(value)
        return args

    return adapt
