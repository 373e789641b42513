"""Pieces every CLI command shares: loading settings, a console, a clean failure."""

from __future__ import annotations

from pathlib import Path

import typer
from pydantic import ValidationError
from rich.console import Console

from eventfold.settings import Settings

console = Console()
err_console = Console(stderr=True)


def load_settings(config: Path | None = None, **overrides: object) -> Settings:
    """Settings from env/.env (and a TOML file when given); a validation error exits with a clear message."""
    try:
        if config is not None:
            return Settings.from_toml(config, **overrides)
        return Settings(**overrides)  # type: ignore[arg-type]
    except (ValidationError, FileNotFoundError) as exc:
        err_console.print(f"[bold red]invalid settings:[/] {exc}")
        raise typer.Exit(2) from exc


def not_built(what: str) -> None:
    err_console.print(f"[yellow]{what} is not built yet.[/]")
    raise typer.Exit(3)
