"""`eventfold eval multihop|drb`: multi-hop QA (MultiHopRAG, HotpotQA, MuSiQue, 2Wiki) and
DeepResearch Bench II. Both resume: rerun the same command to finish an interrupted run."""

from __future__ import annotations

import os
from contextlib import ExitStack
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from cli.common import console, err_console, load_settings, plain, safe
from cli.index_progress import index_progress_bar

app = typer.Typer(no_args_is_help=True)

Mode = Literal["naive", "graph", "event", "agentic", "agent"]
ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML settings file.")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Output folder (default: <home>/runs/eval/...).")]
NoFoldOpt = Annotated[bool, typer.Option("--no-fold", help="Agent without fold/unfold (plain ReAct).")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items (file order).")]
ConcOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Items in flight at once (threads).")]
JudgeUrlOpt = Annotated[
    str | None,
    typer.Option("--judge-url", help="OpenAI-compatible judge base URL (default: the configured model)."),
]
JudgeModelOpt = Annotated[str | None, typer.Option("--judge-model", help="Judge model name at --judge-url.")]
JudgeKeyOpt = Annotated[
    str | None, typer.Option("--judge-key-env", help="Environment variable holding the judge's API key.")
]
ExtractOpt = Annotated[
    str,
    typer.Option(
        "--extract",
        help="Event extraction when indexing: llm, rules, or auto (rules for naive, llm otherwise).",
    ),
]


@app.callback()
def _group() -> None:
    """Evaluate on multi-hop QA sets and DeepResearch Bench II."""


def _fail(message: str, code: int = 2) -> None:
    err_console.print(f"[bold red]{safe(message)}[/]", soft_wrap=True)
    raise typer.Exit(code)


def _print_record(rec: dict[str, Any]) -> None:
    if rec.get("error"):
        console.print(
            f"[red]✗[/] {safe(rec.get('run', rec.get('writer', '')))} {safe(rec.get('qid', rec.get('idx')))}: "
            f"{safe(rec['error'])}"
        )
        return
    metrics = rec.get("metrics") or rec.get("scores") or {}
    shown = " ".join(f"{k}={v:.2f}" for k, v in metrics.items() if isinstance(v, float))
    console.print(
        f"[green]✓[/] {safe(rec.get('run', rec.get('judge', rec.get('writer', ''))))} {safe(rec.get('qid', rec.get('idx')))} "
        f"{shown}"
    )


@app.command("multihop")
def multihop_cmd(
    dataset: Annotated[
        str, typer.Option("--dataset", help="hotpotqa|musique|2wiki|multihoprag, or a folder.")
    ],
    mode: Annotated[
        str, typer.Option("--mode", help="naive|graph|event|agentic (retrieve + read) or agent.")
    ],
    data_dir: Annotated[
        Path | None,
        typer.Option("--data-dir", envvar="EVENTFOLD_DATA_DIR", help="Folder holding named sets."),
    ] = None,
    no_fold: NoFoldOpt = False,
    limit: LimitOpt = None,
    out: OutOpt = None,
    concurrency: ConcOpt = 1,
    top_k: Annotated[
        int, typer.Option("--top-k", min=1, help="Chunks retrieved per question (metrics @10).")
    ] = 10,
    read_k: Annotated[int, typer.Option("--read-k", min=1, help="Chunks the reader focuses on (their best sentences).")] = 10,
    corpus: Annotated[
        str, typer.Option("--corpus", help="full, or questions (the questions' contexts/gold + distractors).")
    ] = "full",
    distractors: Annotated[
        int, typer.Option("--distractors", min=0, help="Extra passages with --corpus questions.")
    ] = 0,
    corpus_questions: Annotated[
        int | None,
        typer.Option(
            "--corpus-questions",
            min=1,
            help="With --corpus questions: build it from the first N questions (default: --limit), "
            "so runs with different --limit share one index.",
        ),
    ] = None,
    extract: ExtractOpt = "auto",
    no_answer: Annotated[
        bool, typer.Option("--no-answer", help="Retrieval metrics only (no reader).")
    ] = False,
    judge: Annotated[
        bool, typer.Option("--judge", help="Add LLM-judged correctness/relevancy/similarity.")
    ] = False,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    judge_key_env: JudgeKeyOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer and score a multi-hop QA set; results.jsonl, summary.json, table.md, plot.png in --out."""
    from eval.multihop.corpus_index import open_indexed_stack, select_passages
    from eval.multihop.loaders import DatasetFormatError, resolve_dataset
    from eval.multihop.runner import run_multihop

    if mode not in ("naive", "graph", "event", "agentic", "agent"):
        _fail(f"--mode must be naive, graph, event, agentic or agent (got {mode!r})")
    if corpus not in ("full", "questions"):
        _fail(f"--corpus must be full or questions (got {corpus!r})")
    if extract not in ("auto", "llm", "rules"):
        _fail(f"--extract must be auto, llm or rules (got {extract!r})")
    if no_fold and mode != "agent":
        _fail("--no-fold applies to --mode agent only")
    settings = load_settings(config)
    try:
        full = resolve_dataset(dataset, data_dir)
    except DatasetFormatError as exc:
        _fail(str(exc))
        return
    ds = full.select(limit)
    extract_mode = extract if extract != "auto" else ("rules" if mode == "naive" else "llm")
    corpus_from = full.select(corpus_questions or limit).examples
    passages = select_passages(full, corpus_from, corpus, distractors)  # type: ignore[arg-type]
    out_dir = out or settings.runs_dir / "eval" / "multihop" / ds.name
    wants_answers = not (no_answer or ds.retrieval_only)
    with ExitStack() as stack_cm:
        chat_model = None
        if wants_answers or mode == "agent" or extract_mode == "llm" or mode == "agentic":
            from eventfold.llm.factory import make_chat_model

            chat_model = make_chat_model(settings)
        console.print(f"indexing {len(passages)} passages of {safe(ds.name)} (extract={extract_mode}) …")
        with index_progress_bar(console) as progress:
            stack, summary = open_indexed_stack(
                settings, ds, passages, extract=extract_mode, chat_model=chat_model, progress=progress
            )  # type: ignore[arg-type]
        stack_cm.callback(stack.close)
        rate = f", {summary.chunks / summary.elapsed_s * 60:,.0f} chunks/min" if summary.chunks and summary.elapsed_s else ""
        console.print(safe(f"index: {summary.brief()}"[:400] + rate))
        system = _qa_system(mode, stack.retriever, chat_model if wants_answers or mode == "agent" else None,
                            settings, fold=not no_fold, top_k=top_k, read_k=read_k)  # fmt: skip
        answer_judge = None
        if judge or judge_url:
            from eval.judge_model import make_judge_model
            from eval.multihop.judge import AnswerJudge

            answer_judge = AnswerJudge(make_judge_model(settings, url=judge_url, model=judge_model,
                                                        api_key_env=judge_key_env, fallback=chat_model))  # fmt: skip
        console.print(f"{safe(ds.name)}: {len(ds.examples)} questions, run {safe(system.name)} → {safe(out_dir)}")
        result = run_multihop(
            ds, system, out_dir, concurrency=concurrency, judge=answer_judge, on_record=_print_record
        )
    console.print(plain((out_dir / "table.md").read_text(encoding="utf-8")))
    console.print(f"summary: {safe(out_dir / 'summary.json')} ({len(result['runs'])} runs)")


def _qa_system(
    mode: str, retriever: Any, chat_model: Any, settings: Any, *, fold: bool, top_k: int, read_k: int
) -> Any:
    from eval.multihop.systems import AgentSystem, RetrieveAndRead

    if mode == "agent":
        from eval.agent_call import AgentCaller, run_eventfold_agent

        return AgentSystem(AgentCaller(run_eventfold_agent, settings, retriever, chat_model, fold=fold))
    return RetrieveAndRead(retriever, mode, chat_model, top_k=top_k, read_k=read_k,  # type: ignore[arg-type]
                           answer_max_tokens=settings.run.answer_max_tokens)  # fmt: skip


@app.command("drb")
def drb_cmd(
    tasks: Annotated[Path, typer.Option("--tasks", help="DeepResearch Bench II tasks_and_rubrics.jsonl.")],
    language: Annotated[str | None, typer.Option("--language", help="en or zh.")] = None,
    theme: Annotated[
        list[str] | None, typer.Option("--theme", help="Only these themes (repeatable).")
    ] = None,
    idx: Annotated[list[int] | None, typer.Option("--idx", help="Only these task idx (repeatable).")] = None,
    limit: LimitOpt = None,
    out: OutOpt = None,
    corpus: Annotated[
        list[Path] | None, typer.Option("--corpus", help="Files/folders the agent researches.")
    ] = None,
    index: Annotated[
        str | None, typer.Option("--index", help="An existing EventRAG index to research.")
    ] = None,
    extract: ExtractOpt = "llm",
    web_search_url: Annotated[
        str | None,
        typer.Option("--web-search-url", envvar="EVENTFOLD_WEB_SEARCH_URL", help="JSON search API."),
    ] = None,
    web_search_flavor: Annotated[
        str, typer.Option("--web-search-flavor", help="auto, searxng or brave.")
    ] = "auto",
    web_search_key_env: Annotated[
        str | None,
        typer.Option("--web-search-key-env", help="Environment variable holding the search API key."),
    ] = None,
    reports: Annotated[
        Path | None,
        typer.Option("--reports", help="Judge existing reports <idx>.md from this folder instead."),
    ] = None,
    no_fold: NoFoldOpt = False,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    judge_key_env: JudgeKeyOpt = None,
    batch_size: Annotated[int, typer.Option("--batch-size", min=1, help="Rubric items per judge call.")] = 50,
    max_retries: Annotated[int, typer.Option("--max-retries", min=0, help="Re-asks for missing items.")] = 3,
    no_reasons: Annotated[
        bool, typer.Option("--no-reasons", help="Judge gives scores only (faster).")
    ] = False,
    max_report_chars: Annotated[int, typer.Option("--max-report-chars", min=100)] = 150_000,
    no_judge: Annotated[bool, typer.Option("--no-judge", help="Write reports only.")] = False,
    concurrency: ConcOpt = 1,
    config: ConfigOpt = None,
) -> None:
    """Write a report per task (agent over --corpus/--index or --web-search-url), judge it, aggregate."""
    from eval.deepresearch_bench.judge import RubricJudge
    from eval.deepresearch_bench.loader import TaskFormatError, load_tasks
    from eval.deepresearch_bench.runner import FolderReportWriter, run_drb

    settings = load_settings(config)
    try:
        selected = load_tasks(tasks, language=language, themes=theme, idx=idx, limit=limit)
    except TaskFormatError as exc:
        _fail(str(exc))
        return
    if not selected:
        _fail("no task matches the filters")
    sources = sum(x is not None and x != [] for x in (corpus, index, web_search_url, reports))
    if sources != 1:
        _fail("give exactly one of --corpus, --index, --web-search-url or --reports")
    out_dir = out or settings.runs_dir / "eval" / "drb"
    with ExitStack() as cm:
        chat_model = None
        if reports is not None:
            writer: Any = FolderReportWriter(reports)
        else:
            from eval.agent_call import AgentCaller, run_eventfold_agent
            from eval.deepresearch_bench.runner import AgentReportWriter
            from eventfold.llm.factory import make_chat_model

            chat_model = make_chat_model(settings)
            backend = _drb_backend(settings, cm, chat_model, corpus, index, extract, web_search_url,
                                   web_search_flavor, web_search_key_env)  # fmt: skip
            caller = AgentCaller(
                run_eventfold_agent, settings, backend, chat_model, fold=not no_fold, report_mode="long"
            )
            writer = AgentReportWriter(caller)
        rubric_judge, warning = None, None
        if not no_judge:
            from eval.judge_model import make_judge_model

            judge_chat = make_judge_model(settings, url=judge_url, model=judge_model, api_key_env=judge_key_env,
                                          fallback=chat_model)  # fmt: skip
            rubric_judge = RubricJudge(judge_chat, batch_size=batch_size, max_retries=max_retries,
                                       max_report_chars=max_report_chars, with_reason=not no_reasons)  # fmt: skip
            if not judge_url and settings.llm.backend == "local":
                warning = (f"The judge is a small local model ({safe(judge_chat.name)} through llama.cpp): its scores "
                           "do not measure the reports; judge with --judge-url/--judge-model (a capable model "
                           "on any OpenAI-compatible server).")  # fmt: skip
                console.print(f"[yellow]{warning}[/yellow]")
        console.print(f"DRB II: {len(selected)} tasks, writer {safe(writer.name)} → {safe(out_dir)}")
        summary = run_drb(
            selected, writer, rubric_judge, out_dir, concurrency=concurrency, on_record=_print_record,
            judge_warning=warning,
        )
    if summary is not None:
        console.print(plain((out_dir / "table.md").read_text(encoding="utf-8")))


def _drb_backend(settings: Any, cm: ExitStack, chat_model: Any, corpus: list[Path] | None, index: str | None,
                 extract: str, url: str | None, flavor: str, key_env: str | None) -> Any:  # fmt: skip
    if url:
        from agent.tools.web_search import WebSearchBackend, WebSearchClient, WebSearchSettings

        key = os.environ.get(key_env) if key_env else None
        client = WebSearchClient(WebSearchSettings(url=url, flavor=flavor, api_key=key))  # type: ignore[arg-type]
        cm.callback(client.close)
        return WebSearchBackend(client)
    from eventrag.stack import open_stack

    if extract not in ("auto", "llm", "rules"):
        _fail(f"--extract must be auto, llm or rules (got {extract!r})")
    scoped = settings.model_copy(update={"index": index}) if index else settings
    stack = open_stack(scoped, chat_model=chat_model, extract=extract)  # type: ignore[arg-type]
    cm.callback(stack.close)
    if corpus:
        missing = [str(p) for p in corpus if not p.exists()]
        if missing:
            _fail(f"corpus path(s) not found: {', '.join(missing)}")
        console.print(f"indexing {len(corpus)} corpus path(s) into index {safe(scoped.index)} …")
        with index_progress_bar(console) as progress:
            stack.indexer.index_paths(corpus, progress=progress)
    return stack.retriever
