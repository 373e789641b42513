"""Pieces every CLI command shares: loading settings, a console, a clean failure, safe printing.

Every message that carries outside text (a document's text or path, a server's error) goes through
`safe()` (inside markup) or `plain()` (a rich Text): control characters made visible, console markup
escaped, secrets masked. Both consoles are `SafeConsole`s: whatever reaches the terminal through them
passes `terminal_safe` once more, so a string that skipped `safe()` still cannot drive the terminal."""

from __future__ import annotations

import functools
import logging
import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, NoReturn, ParamSpec, TypeVar

import typer
from pydantic import ValidationError
from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from eventfold.settings import Settings, SettingsFileError, describe_error
from eventfold.text_safety import console_escape, install_log_masking, mask_secrets, terminal_safe


class SafeConsole(Console):
    """A rich Console whose text segments pass `terminal_safe` before they are written: rich's own
    styling (escape sequences made from styles) and control segments (cursor moves of a progress bar)
    are untouched; an ESC, CSI or OSC inside the text is shown, never acted on."""

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            if segment.control or segment.text.isprintable() or not segment.text:
                yield segment
            else:
                yield Segment(terminal_safe(segment.text), segment.style, segment.control)


P = ParamSpec("P")
R = TypeVar("R")

console = SafeConsole()
err_console = SafeConsole(stderr=True)


def safe(text: object) -> str:
    """Outside text for rich markup: secrets masked, control characters visible, markup escaped."""
    return console_escape(mask_secrets(text))


def plain(text: object) -> Text:
    """Outside text as a rich Text (never parsed as markup): secrets masked, control characters visible."""
    return Text(terminal_safe(mask_secrets(text)))


class TerminalSafeFormatter(logging.Formatter):
    """Log lines on the console carry file names and server replies: their control characters are shown."""

    def format(self, record: logging.LogRecord) -> str:
        return terminal_safe(super().format(record))


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
        handler.setFormatter(TerminalSafeFormatter("%(levelname)s %(name)s: %(message)s"))
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
    from eventrag.storage.errors import StoreCorrupt, StoreLocked

    if isinstance(exc, StoreCorrupt):
        fail(f"index '{settings.index}' is damaged:",
             f"{exc}. Move the file away (`mv {shlex.quote(exc.path)} {shlex.quote(exc.path + '.damaged')}`), then "
             f"run `eventfold index PATH --index {settings.index}` with every folder of the index: it is rebuilt "
             "from the files", code=1)
    if isinstance(exc, StoreLocked):
        fail(f"index '{settings.index}' is in use by another process",
             f"(an `eventfold index` or `ask` still running?): wait for it to finish, or use another --index. "
             f"Details: {exc}", code=1)
    fail("cannot open the stores:", exc, code=1)



def needs_extras(what: str) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """Decorate a command: a module of an optional extra that is missing exits 2 naming the extra and
    the install command (``pip install 'eventfold[train]'``), not a traceback. Other errors pass."""
    from eventfold.extras import missing_extra

    def decorate(command: Callable[P, R]) -> Callable[P, R]:
        @functools.wraps(command)
        def run(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                return command(*args, **kwargs)
            except ImportError as exc:
                missing = missing_extra(exc, what)
                if missing is None:
                    raise
                fail("missing extra:", missing, code=2)

        return run

    return decorate


def model_overrides(model: str, backend: str) -> dict[str, object]:
    """The `llm` settings `--model MODEL` stands for; an unknown name exits 2 listing the packaged models."""
    from eventfold.models import ModelNotFoundError, llm_overrides_for

    try:
        return llm_overrides_for(model, backend)
    except ModelNotFoundError as exc:
        fail("unknown --model:", exc, code=2)


def require_index(stack: Any, settings: Settings) -> None:
    """Exit 1 unless the stack's index has documents and its vector store agrees with its graph (counts
    per kind); an unfinished indexing run (documents pending) is a warning, not a failure."""
    from eventrag.index.health import check_index
    from eventrag.storage.errors import StorageError

    try:
        health = check_index(stack.graph, stack.vectors, stack.indexer.collections)
    except StorageError as exc:  # a page of the graph file damaged past its header
        store_failure(exc, settings)
    name = settings.index
    if health.empty:
        fail(f"index '{name}' is empty:", f"run `eventfold index PATH --index {name}` first", code=1)
    if health.ok:
        return
    problems = "; ".join(health.problems())
    if health.pending:
        err_console.print(f"[yellow]index '{safe(name)}': {health.pending} document(s) not finished indexing[/] "
                          f"(an `eventfold index` running or interrupted; {safe(problems)}): results may be "
                          "incomplete", soft_wrap=True)
        return
    fail(f"index '{name}' is damaged:", f"{problems}. Rebuild it with `{health.rebuild_command(name)}`", code=1)
