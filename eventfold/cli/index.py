"""`eventfold index`."""

from __future__ import annotations

import typer

from eventfold.cli.common import not_built


def register(app: typer.Typer) -> None:
    @app.command("index")
    def _cmd() -> None:
        """Not built yet."""
        not_built("eventfold index")
