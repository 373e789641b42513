"""`eventfold ask "question" [--corpus DIR | --index NAME] [--policy model|workflow] [--budget N] ...`

Indexes DIR through the EventRAG stack (incremental: unchanged files are skipped) into an index
named after the directory unless --index is given, runs the research agent with streamed progress
(each call the policy chooses and its result), and prints the cited report, whose footer gives the
policy, tool calls, folds/unfolds, context tokens and wall time. Report and trajectory are saved
under `<home>/runs/<run_id>/`.
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Any, Literal

import typer
from rich.markdown import Markdown

from cli.common import (
    console,
    err_console,
    fail,
    load_settings,
    model_overrides,
    plain,
    require_index,
    safe,
    setup_logging,
    store_failure,
)
from eventfold.settings import Settings
from eventfold.text_safety import terminal_safe


def index_name_for(corpus: Path) -> str:
    """``<folder name>-<8 hex of the resolved path>``: two folders of one name get two indexes."""
    full = corpus.expanduser().resolve()
    name = re.sub(r"[^A-Za-z0-9_.-]", "-", full.name).lstrip(".") or "corpus"
    return f"{name[:55]}-{hashlib.sha256(str(full).encode('utf-8', 'surrogatepass')).hexdigest()[:8]}"


def resolve_settings(
    config: Path | None,
    *,
    corpus: Path | None,
    index: str | None,
    budget: int | None,
    max_steps: int | None,
    model: str | None,
) -> Settings:
    base = load_settings(config)
    data: dict[str, Any] = base.model_dump()
    if index or corpus:
        data["index"] = index or index_name_for(corpus)  # type: ignore[arg-type]
    if budget is not None:
        data["run"]["context_budget"] = budget
    if max_steps is not None:
        data["run"]["max_steps"] = max_steps
    if model:
        data["llm"].update(model_overrides(model, base.llm.backend))
    return load_settings(None, **data)


def print_event(event: dict[str, Any]) -> None:
    """One line of progress per event of the run (model and document text printed as text, never markup)."""
    kind = event.get("type")
    if kind == "items":
        console.print("[dim]items:[/]")
        for i, item in enumerate(event["items"], 1):
            console.print(plain(f"  {i}. {item}"), highlight=False)  # model text: never markup
    elif kind == "context":
        console.print(f"[dim]step {event['step']} · context {event['tokens']}/{event['budget']} tokens[/]")
    elif kind == "tool_call":
        args = ", ".join(f"{k}={v!r}" for k, v in event["arguments"].items())
        console.print(f"  [cyan]→ {safe(event['name'])}[/]({safe(args[:160])})", markup=True, highlight=False)
    elif kind == "tool_result":
        first = event["content"].splitlines()[0][:140] if event["content"] else ""
        style = "red" if event["error"] else "dim"
        console.print(f"    [{style}]{safe(first)}[/]", highlight=False)
    elif kind in ("fold", "guard_fold"):
        who = "budget guard" if kind == "guard_fold" else "policy"
        extra = f" ({event['tokens_before']} → {event['tokens_after']} tokens)" if kind == "guard_fold" else ""
        console.print(f"  [magenta]fold {event['fold_id']}: steps {event['start']}-{event['end']} by {who}{extra}[/]")
    elif kind == "unfold":
        console.print(f"  [magenta]unfold {event['fold_id']}: steps {event['steps']}[/]")
    elif kind == "invalid":
        console.print(f"  [yellow]invalid turn (not a usable tool call): {safe(repr(event['text'][:100]))}[/]")


CHOICES: dict[str, tuple[str | None, ...]] = {
    "fold_summary": ("llm", "deterministic"),
    "extract": ("auto", "llm", "rules"),
    "report": ("short", "full", "long"),
    "policy": ("model", "workflow"),
    "mode": (None, "naive", "graph", "event", "agentic"),
}


def bad_choice(**values: str | None) -> str | None:
    """The first option whose value is not one of its choices, said with the choices; None if all fit."""
    for name, value in values.items():
        if value not in CHOICES[name]:
            valid = " | ".join(c for c in CHOICES[name] if c is not None)
            return f"--{name.replace('_', '-')} {value!r}: choose {valid}"
    return None


def register(app: typer.Typer) -> None:
    @app.command("ask")
    def ask(
        question: str = typer.Argument(..., help="The research question."),
        corpus: Path | None = typer.Option(  # noqa: B008
            None, "--corpus", help="Index this directory first (incremental)."
        ),
        index: str | None = typer.Option(None, "--index", help="Index name (default: the corpus dir name)."),
        budget: int | None = typer.Option(None, "--budget", help="Context budget in tokens."),
        no_fold: bool = typer.Option(
            False, "--no-fold", help="Plain ReAct: no fold/unfold, no budget guard."
        ),
        max_steps: int | None = typer.Option(None, "--max-steps", help="Step cap before a forced answer."),
        model: str | None = typer.Option(
            None, "--model", help="GGUF path, packaged model name, a trained model directory (transformers), or server model."
        ),
        fold_summary: str = typer.Option("llm", "--fold-summary", help="llm | deterministic"),
        extract: str = typer.Option("auto", "--extract", help="Indexing extraction: auto | llm | rules."),
        mode: str | None = typer.Option(
            None, "--mode", help="Retrieval mode: naive | graph | event | agentic."
        ),
        report: str = typer.Option(
            "short",
            "--report",
            help="short (answer, the cited sentences, sources, run numbers: one screen) | full (+ the steps, "
            "timelines and all evidence seen) | long (full + a written summary; a structured request's "
            "requirements become its items).",
        ),
        policy: str = typer.Option(
            "model", "--policy", help="model (the LLM picks every call) | workflow (scripted by question form)."
        ),
        resume: str | None = typer.Option(None, "--resume", help="Continue an interrupted run by its id."),
        config: Path | None = typer.Option(None, "--config", help="TOML settings file."),  # noqa: B008
    ) -> None:
        """Research a question with the fold/unfold agent and print a cited report."""
        setup_logging()
        if corpus is not None and not corpus.is_dir():
            fail(f"--corpus {corpus} is not a directory", code=2)
        bad = bad_choice(fold_summary=fold_summary, extract=extract, report=report, policy=policy, mode=mode)
        if bad:
            err_console.print(f"[bold red]bad option value[/] {safe(bad)} (see `eventfold ask --help`)")
            raise typer.Exit(2)
        settings = resolve_settings(
            config, corpus=corpus, index=index, budget=budget, max_steps=max_steps, model=model
        )
        run_ask(settings, question, corpus=corpus, fold=not no_fold, fold_summary=fold_summary, extract=extract,  # type: ignore[arg-type]
                mode=mode, report_mode=report, policy=policy, resume=resume)  # type: ignore[arg-type]  # fmt: skip


def run_ask(
    settings: Settings,
    question: str,
    *,
    corpus: Path | None,
    fold: bool,
    fold_summary: Literal["llm", "deterministic"] = "llm",
    extract: Literal["auto", "llm", "rules"] = "auto",
    mode: str | None = None,
    report_mode: Literal["short", "full", "long"] = "short",
    policy: Literal["model", "workflow"] = "model",
    resume: str | None = None,
) -> Any:
    """Load the model, open (and update) the index, run or resume the agent, print its report."""
    from agent.graph import AgentDeps
    from agent.runner import resume_run, run_agent
    from agent.search_backend import ModeBackend
    from eventfold.llm.types import LLMUnavailable
    from eventfold.run_options import AgentInputError

    options, chat = _start(settings, question, resume, fold=fold, fold_summary=fold_summary,
                           report_mode=report_mode, policy=policy)  # fmt: skip
    with _open_stack(settings, chat, extract) as stack:
        if corpus is not None:
            _index(stack, corpus)
        require_index(stack, settings)  # an empty or damaged index: said, exit 1 (no report without evidence)
        deps = AgentDeps(model=chat, backend=ModeBackend(stack.retriever, mode))  # type: ignore[arg-type]
        try:
            if resume:
                result = resume_run(resume, deps, options, settings.runs_dir, on_event=print_event)
            else:
                result = run_agent(question, deps, options, runs_dir=settings.runs_dir, on_event=print_event)
        except (AgentInputError, LLMUnavailable) as exc:
            fail("cannot run:" if isinstance(exc, AgentInputError) else "the model did not answer, no report:", exc, code=2)
    print_result(result)
    return result


def print_result(result: Any) -> None:
    """The report, the footer and where the run was saved; exit 1 when the model failed mid-run."""
    console.rule("report")
    console.print(Markdown(terminal_safe(result.report)))
    console.rule()
    console.print(f"[dim]report: {result.report_path} · trajectory: {result.trajectory_path}[/]")
    if result.llm_error:
        fail("the model failed during the run; the report above holds only the evidence found before:",
             result.llm_error, code=1)


def _start(settings: Settings, question: str, resume: str | None, **choices: Any) -> tuple[Any, Any]:
    """The run's options and the loaded model; a clear exit (code 2) when either cannot be had."""
    from agent.runner import validate_question
    from eventfold.llm.factory import make_chat_model
    from eventfold.llm.types import LLMError
    from eventfold.models import ModelNotFoundError
    from eventfold.run_options import AgentInputError, RunOptions

    try:
        if resume is None:
            validate_question(question, long=choices.get("report_mode") == "long")
        options = RunOptions.for_research(settings, **choices)
        t0 = time.perf_counter()
        chat = make_chat_model(settings)
        console.print(f"[dim]model {chat.name} loaded in {time.perf_counter() - t0:.1f} s · index {settings.index}[/]")
    except (AgentInputError, ModelNotFoundError, LLMError, ValueError) as exc:
        fail("cannot start:", exc, code=2)
    return options, chat


def _open_stack(settings: Settings, chat: Any, extract: str) -> Any:
    from eventrag.stack import open_stack
    from eventrag.storage.errors import StorageError

    try:
        return open_stack(settings, chat_model=chat, extract=extract)  # type: ignore[arg-type]
    except StorageError as exc:  # e.g. StoreLocked: the index is being written by another process
        store_failure(exc, settings)


def _index(stack: Any, corpus: Path) -> None:
    t0 = time.perf_counter()
    with console.status(f"indexing {safe(corpus)} …"):
        summary = stack.indexer.index_paths([corpus])
    console.print(f"[dim]indexed {safe(corpus)} in {time.perf_counter() - t0:.1f} s: {safe(summary.brief())}[/]")
    for skipped in summary.skipped:
        err_console.print(f"[yellow]skipped[/] {safe(skipped.reason)}", soft_wrap=True)
