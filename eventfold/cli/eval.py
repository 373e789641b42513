"""`eventfold eval ...`."""

from __future__ import annotations

import typer

from eventfold.cli.common import not_built

app = typer.Typer(no_args_is_help=True)


@app.callback()
def _group() -> None:
    """eval commands."""


@app.command("todo", hidden=True)
def _todo() -> None:
    not_built("eventfold eval")
