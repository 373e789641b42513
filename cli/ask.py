"""`eventfold ask "question" [--corpus DIR | --index NAME] [--budget N] [--no-fold] ...`

Indexes DIR through the EventRAG stack (incremental: unchanged files are skipped) into an index
named after the directory unless --index is given, runs the research agent with streamed progress,
prints the cited report and a footer (steps, tool calls, folds/unfolds, peak/final context tokens,
wall time, model). Report and trajectory are saved under `<home>/runs/<run_id>/`.
"""

from __future__ import annotations

import hashlib
import re
import time
from pathlib import Path
from typing import Any, Literal

import typer
from rich.markdown import Markdown
from rich.table import Table

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
    kind = event.get("type")
    if kind == "plan":
        console.print("[dim]plan:[/]")
        for i, sub in enumerate(event["sub_questions"], 1):
            console.print(plain(f"  {i}. {sub}"), highlight=False)  # model text: never markup
    elif kind == "context":
        console.print(f"[dim]step {event['step']} · context {event['tokens']}/{event['budget']} tokens[/]")
    elif kind == "tool_call":
        args = ", ".join(f"{k}={v!r}" for k, v in event["arguments"].items())
        console.print(f"  [cyan]→ {safe(event['name'])}[/]({safe(args[:160])})", markup=True, highlight=False)
    elif kind == "tool_result":  # document text: printed as written, never as markup
        first = event["content"].splitlines()[0][:140] if event["content"] else ""
        style = "red" if event["error"] else "dim"
        console.print(f"    [{style}]{safe(first)}[/]", highlight=False)
    elif kind in ("fold", "guard_fold"):
        who = "budget guard" if kind == "guard_fold" else "agent"
        extra = (
            f" ({event['tokens_before']} → {event['tokens_after']} tokens)" if kind == "guard_fold" else ""
        )
        console.print(
            f"  [magenta]fold {event['fold_id']}: steps {event['start']}-{event['end']} by {who}{extra}[/]"
        )
    elif kind == "unfold":
        console.print(f"  [magenta]unfold {event['fold_id']}: steps {event['steps']}[/]")
    elif kind == "invalid":
        console.print(f"  [yellow]invalid turn (not a tool call): {safe(repr(event['text'][:100]))}[/]")
    elif kind == "forced_answer":
        who = "reader over the evidence" if event.get("source") == "reader" else "model (unsupported)"
        console.print(f"  [yellow]stopped ({safe(event['reason'])}); answer by the {who}:[/]")
        console.print(plain(f"  {event['answer']}"), highlight=False)


def footer(result: Any) -> Table:
    c = result.run.counters
    table = Table(show_header=False, box=None, pad_edge=False)
    rows = [
        ("steps", str(len(result.run.steps))),
        ("tool calls", f"{c.tool_calls} ({c.tool_errors} errors)"),
        ("folds", f"{c.folds} by the model, {c.guard_folds} by the budget guard · unfolds {c.unfolds}"),
        ("answer by", result.run.answer_source or "-"),
        ("context tokens", f"peak {c.peak_context_tokens}, final {c.final_context_tokens}"),
        ("prompt tokens", f"{c.evaluated_prompt_tokens} evaluated of {c.prompt_tokens} ({c.llm_calls} LLM calls)"),
        ("generated tokens", str(c.completion_tokens)),
        ("wall time", f"{result.wall_s:.1f} s"),
        ("model", result.model),
    ]
    for k, v in rows:
        table.add_row(f"[bold]{k}[/]", v)
    return table


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
            "full",
            "--report",
            help="full (answer, findings per sub-question, sources, open questions) | short (answer + "
            "sources) | long (full + a written summary).",
        ),
        resume: str | None = typer.Option(None, "--resume", help="Continue an interrupted run by its id."),
        config: Path | None = typer.Option(None, "--config", help="TOML settings file."),  # noqa: B008
    ) -> None:
        """Research a question with the fold/unfold agent and print a cited report."""
        setup_logging()
        if corpus is not None and not corpus.is_dir():
            fail(f"--corpus {corpus} is not a directory", code=2)
        if (
            fold_summary not in ("llm", "deterministic")
            or extract not in ("auto", "llm", "rules")
            or report not in ("short", "full", "long")
            or mode not in (None, "naive", "graph", "event", "agentic")
        ):
            err_console.print("[bold red]bad option value[/] (see `eventfold ask --help`)")
            raise typer.Exit(2)
        settings = resolve_settings(
            config, corpus=corpus, index=index, budget=budget, max_steps=max_steps, model=model
        )
        run_ask(
            settings,
            question,
            corpus=corpus,
            fold=not no_fold,
            fold_summary=fold_summary,  # type: ignore[arg-type]
            extract=extract,
            mode=mode,
            report_mode=report,
            resume=resume,
        )  # type: ignore[arg-type]


def run_ask(
    settings: Settings,
    question: str,
    *,
    corpus: Path | None,
    fold: bool,
    fold_summary: Literal["llm", "deterministic"] = "llm",
    extract: Literal["auto", "llm", "rules"] = "auto",
    mode: str | None = None,
    report_mode: Literal["short", "full", "long"] = "full",
    resume: str | None = None,
) -> Any:
    from agent.graph import AgentDeps
    from agent.runner import resume_run, run_agent, validate_question
    from agent.search_backend import ModeBackend
    from eventfold.llm.factory import make_chat_model
    from eventfold.llm.types import LLMError, LLMUnavailable
    from eventfold.models import ModelNotFoundError
    from eventfold.run_options import AgentInputError, RunOptions
    from eventrag.stack import open_stack

    try:
        if resume is None:
            validate_question(question)
        options = RunOptions.for_research(
            settings, fold=fold, fold_summary=fold_summary, report_mode=report_mode
        )
        t0 = time.perf_counter()
        chat = make_chat_model(settings)
        console.print(
            f"[dim]model {chat.name} loaded in {time.perf_counter() - t0:.1f} s · index {settings.index}[/]"
        )
    except (AgentInputError, ModelNotFoundError, LLMError, ValueError) as exc:
        fail("cannot start:", exc, code=2)
    from eventrag.storage.errors import StorageError

    try:
        stack = open_stack(settings, chat_model=chat, extract=extract)
    except StorageError as exc:  # e.g. StoreLocked: the index is being written by another process
        store_failure(exc, settings)
    with stack:
        if corpus is not None:
            t0 = time.perf_counter()
            with console.status(f"indexing {safe(corpus)} …"):
                summary = stack.indexer.index_paths([corpus])
            console.print(f"[dim]indexed {safe(corpus)} in {time.perf_counter() - t0:.1f} s: {safe(summary.brief())}[/]")
            for skipped in summary.skipped:
                err_console.print(f"[yellow]skipped[/] {safe(skipped.reason)}", soft_wrap=True)
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
    console.print(footer(result))
    console.print(f"[dim]report: {result.report_path} · trajectory: {result.trajectory_path}[/]")
    if result.llm_error:
        fail("the model failed during the run; the report above holds only the evidence found before:",
             result.llm_error, code=1)
