"""The indexing progress bar shared by `index`, the eval harness and the benchmarks.

One rich bar: documents done/total, chunks, events, throughput (chunks/min, events/s) and ETA; inside
a batch of long documents it moves with their chunks (``chunk 640/6,800``); the current document's name
is shown escaped (file names are data, never console markup).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from eventfold.text_safety import console_escape, terminal_safe

if TYPE_CHECKING:  # the CLI starts without importing the indexer
    from eventrag.index.indexer import IndexProgress


def describe(p: IndexProgress) -> str:
    """`1,234 chunks · 5,678 events · 310 chunks/min · 12.0 events/s · ETA 4:10`."""
    eta = p.eta_s
    eta_txt = "—" if eta is None else f"{int(eta // 60)}:{int(eta % 60):02d}"
    within = f"chunk {p.batch_chunks_done:,}/{p.batch_chunks_total:,} · " if p.batch_chunks_total else ""
    return (f"{within}{p.chunks:,} chunks · {p.events:,} events · {p.chunks_per_min:,.0f} chunks/min · "
            f"{p.events_per_s:,.1f} events/s · ETA {eta_txt}")


@contextmanager
def index_progress_bar(console: Console, label: str = "indexing",
                       log_every_s: float = 30.0) -> Iterator[Callable[[IndexProgress], None]]:
    """Yields the callback to pass as `progress=` to `Indexer.index_documents`/`index_paths`. On a console
    that is not a terminal (a log file, CI) it prints a plain progress line every `log_every_s` instead."""
    if not console.is_terminal:
        last = [-log_every_s]

        def log(p: IndexProgress) -> None:
            if p.elapsed_s - last[0] >= log_every_s or p.docs_done >= p.docs_total:
                last[0] = p.elapsed_s
                console.print(f"{terminal_safe(label)}: {p.docs_done:,}/{p.docs_total:,} docs · {describe(p)}", markup=False,
                              highlight=False)

        yield log
        return
    with Progress(TextColumn(f"[bold]{console_escape(label)}"), BarColumn(), MofNCompleteColumn(), TextColumn("docs"),
                  TimeElapsedColumn(), TextColumn("{task.description}"), console=console, transient=True) as bar:
        task = bar.add_task("", total=None)

        def update(p: IndexProgress) -> None:
            name = p.current[-40:]
            bar.update(task, completed=p.docs_progress, total=p.docs_total,
                       description=f"{describe(p)}  [dim]{console_escape(name)}[/]")

        yield update
