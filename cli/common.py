"""Pieces every CLI command shares: loading settings, a console, a clean failure, safe printing.

Every message that carries outside text (a document's text or path, a server's error) goes through
`safe()`: console markup escaped, secrets masked."""

from __future__ import annotations

import logging
from pathlib import Path
from typing import NoReturn

import typer
from pydantic import ValidationError
from rich.console import Console

from eventfold.settings import Settings, SettingsFileError, describe_error
from eventfold.text_safety import console_escape, install_log_masking, mask_secrets

console = Console()
err_console = Console(stderr=True)


def safe(text: object) -> str:
    """Outside text ready for a rich console: secrets masked, markup escaped (printed as written)."""
    return console_escape(mask_secrets(text))


def fail(headline: str, detail: object = "", code: int = 1) -> NoReturn:
    """Print ``headline: detail`` (detail escaped and masked) on stderr and exit with `code`."""
    err_console.print(f"[bold red]{console_escape(headline)}[/]" + (f" {safe(detail)}" if detail != "" else ""),
                      soft_wrap=True)
    raise typer.Exit(code)


def setup_logging(level: int = logging.WARNING) -> None:
    """Warnings of the libraries on stderr, with secrets masked in every line (once per process)."""
    root = logging.getLogger()
    if not root.handlers:
        handler = logging.StreamHandler()
        handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
        # the handler filters too: a library that sets its own logger to DEBUG (bm25s does) still
        # stays off the console below `level`
        handler.setLevel(level)
        root.addHandler(handler)
        root.setLevel(level)
    # Milvus Lite logs a lock or start failure with a traceback; the store raises StoreLocked or
    # StoreUnavailable for it, which the command reports as one clear line
    logging.getLogger("milvus_lite").setLevel(logging.CRITICAL)
    install_log_masking()


def load_settings(config: Path | None = None, **overrides: object) -> Settings:
    """Settings from the environment (and a TOML file when given); a bad file or value exits with a
    clear message (never a traceback, never a secret)."""
    try:
        if config is not None:
            return Settings.from_toml(config, **overrides)
        return Settings(**overrides)  # type: ignore[arg-type]
    except (ValidationError, FileNotFoundError, SettingsFileError) as exc:
        fail("invalid settings:", describe_error(exc), code=2)


def store_failure(exc: Exception, settings: Settings) -> NoReturn:
    """A store that cannot be opened: a locked index gets advice, anything else its message."""
    from eventrag.storage.errors import StoreLocked

    if isinstance(exc, StoreLocked):
        fail(f"index '{settings.index}' is in use by another process",
             f"(an `eventfold index` or `ask` still running?): wait for it to finish, or use another --index. "
             f"Details: {exc}", code=1)
    fail("cannot open the stores:", exc, code=1)

