"""`eventfold eval multihop|drb`: multi-hop QA (MultiHopRAG, HotpotQA, MuSiQue, 2Wiki) and
DeepResearch Bench II. Both resume: rerun the same command to finish an interrupted run."""

from __future__ import annotations

import os
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any

import typer

from cli.common import console, err_console, load_settings, plain, safe
from cli.index_progress import index_progress_bar

app = typer.Typer(no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML settings file.")]
OutOpt = Annotated[Path | None, typer.Option("--out", help="Output folder (default: <home>/runs/eval/...).")]
NoFoldOpt = Annotated[bool, typer.Option("--no-fold", help="Agent without fold/unfold (plain ReAct).")]
LimitOpt = Annotated[int | None, typer.Option("--limit", min=1, help="Only the first N items (file order).")]
ConcOpt = Annotated[int, typer.Option("--concurrency", min=1, help="Items in flight at once (threads).")]
JudgeUrlOpt = Annotated[str | None, typer.Option(
    "--judge-url", help="OpenAI-compatible judge base URL (default: the configured model).")]
JudgeModelOpt = Annotated[str | None, typer.Option("--judge-model", help="Judge model name at --judge-url.")]
JudgeKeyOpt = Annotated[str | None, typer.Option(
    "--judge-key-env", help="Environment variable holding the judge's API key.")]
ExtractOpt = Annotated[str, typer.Option(
    "--extract", help="Event extraction when indexing: llm, rules, or auto (rules for naive, llm otherwise).")]


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


DatasetOpt = Annotated[str, typer.Option("--dataset", help="hotpotqa|musique|2wiki|multihoprag, or a folder.")]
ModeOpt = Annotated[str, typer.Option("--mode", help="naive|graph|event|agentic (retrieve + read) or agent.")]
DataDirOpt = Annotated[
    Path | None, typer.Option("--data-dir", envvar="EVENTFOLD_DATA_DIR", help="Folder holding named sets.")
]
TopKOpt = Annotated[int, typer.Option("--top-k", min=1, help="Chunks retrieved per question (metrics @10).")]
ReadKOpt = Annotated[int, typer.Option("--read-k", min=1, help="Chunks the reader focuses on (their best sentences).")]
CorpusOpt = Annotated[
    str, typer.Option("--corpus", help="full, or questions (the questions' contexts/gold + distractors).")
]
DistractorsOpt = Annotated[int, typer.Option("--distractors", min=0, help="Extra passages with --corpus questions.")]
CorpusQuestionsOpt = Annotated[
    int | None,
    typer.Option(
        "--corpus-questions",
        min=1,
        help="With --corpus questions: build it from the first N questions (default: --limit), "
        "so runs with different --limit share one index.",
    ),
]
NoAnswerOpt = Annotated[bool, typer.Option("--no-answer", help="Retrieval metrics only (no reader).")]
JudgeOpt = Annotated[bool, typer.Option("--judge", help="Add LLM-judged correctness/relevancy/similarity.")]


@dataclass(frozen=True)
class JudgeChoice:
    """Where the judge model is served (``--judge-url/--judge-model/--judge-key-env``)."""

    url: str | None
    model: str | None
    key_env: str | None

    def make(self, settings: Any, fallback: Any) -> Any:
        from eval.judge_model import make_judge_model

        return make_judge_model(settings, url=self.url, model=self.model, api_key_env=self.key_env, fallback=fallback)


@dataclass(frozen=True)
class MultihopRun:
    """One ``eval multihop`` invocation, its options checked by :meth:`check`."""

    dataset: str
    mode: str
    data_dir: Path | None
    fold: bool
    limit: int | None
    out: Path | None
    concurrency: int
    top_k: int
    read_k: int
    corpus: str
    distractors: int
    corpus_questions: int | None
    extract: str
    answer: bool
    judge: bool
    judge_model: JudgeChoice
    config: Path | None

    def check(self) -> None:
        if self.mode not in ("naive", "graph", "event", "agentic", "agent"):
            _fail(f"--mode must be naive, graph, event, agentic or agent (got {self.mode!r})")
        if self.corpus not in ("full", "questions"):
            _fail(f"--corpus must be full or questions (got {self.corpus!r})")
        if self.extract not in ("auto", "llm", "rules"):
            _fail(f"--extract must be auto, llm or rules (got {self.extract!r})")
        if not self.fold and self.mode != "agent":
            _fail("--no-fold applies to --mode agent only")

    @property
    def extract_mode(self) -> str:
        return self.extract if self.extract != "auto" else ("rules" if self.mode == "naive" else "llm")


@app.command("multihop")
def multihop_cmd(
    dataset: DatasetOpt,
    mode: ModeOpt,
    data_dir: DataDirOpt = None,
    no_fold: NoFoldOpt = False,
    limit: LimitOpt = None,
    out: OutOpt = None,
    concurrency: ConcOpt = 1,
    top_k: TopKOpt = 10,
    read_k: ReadKOpt = 10,
    corpus: CorpusOpt = "full",
    distractors: DistractorsOpt = 0,
    corpus_questions: CorpusQuestionsOpt = None,
    extract: ExtractOpt = "auto",
    no_answer: NoAnswerOpt = False,
    judge: JudgeOpt = False,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    judge_key_env: JudgeKeyOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Answer and score a multi-hop QA set; results.jsonl, summary.json, table.md, plot.png in --out."""
    run = MultihopRun(
        dataset=dataset, mode=mode, data_dir=data_dir, fold=not no_fold, limit=limit, out=out,
        concurrency=concurrency, top_k=top_k, read_k=read_k, corpus=corpus, distractors=distractors,
        corpus_questions=corpus_questions, extract=extract, answer=not no_answer, judge=judge,
        judge_model=JudgeChoice(judge_url, judge_model, judge_key_env), config=config,
    )  # fmt: skip
    run.check()
    _run_multihop(run)


def _run_multihop(run: MultihopRun) -> None:
    from eval.multihop.corpus_index import select_passages
    from eval.multihop.loaders import DatasetFormatError, resolve_dataset
    from eval.multihop.runner import run_multihop

    settings = load_settings(run.config)
    try:
        full = resolve_dataset(run.dataset, run.data_dir)
    except DatasetFormatError as exc:
        _fail(str(exc))
        return
    ds = full.select(run.limit)
    corpus_from = full.select(run.corpus_questions or run.limit).examples
    passages = select_passages(full, corpus_from, run.corpus, run.distractors)  # type: ignore[arg-type]
    out_dir = run.out or settings.runs_dir / "eval" / "multihop" / ds.name
    wants_answers = run.answer and not ds.retrieval_only
    with ExitStack() as stack_cm:
        chat_model = None
        if wants_answers or run.mode in ("agent", "agentic") or run.extract_mode == "llm":
            from eventfold.llm.factory import make_chat_model

            chat_model = make_chat_model(settings)
        stack = _open_eval_index(settings, ds, passages, run.extract_mode, chat_model)
        stack_cm.callback(stack.close)
        system = _qa_system(run.mode, stack.retriever, chat_model if wants_answers or run.mode == "agent" else None,
                            settings, fold=run.fold, top_k=run.top_k, read_k=run.read_k)  # fmt: skip
        answer_judge = None
        if run.judge or run.judge_model.url:
            from eval.multihop.judge import AnswerJudge

            answer_judge = AnswerJudge(run.judge_model.make(settings, fallback=chat_model))
        console.print(f"{safe(ds.name)}: {len(ds.examples)} questions, run {safe(system.name)} → {safe(out_dir)}")
        result = run_multihop(
            ds, system, out_dir, concurrency=run.concurrency, judge=answer_judge, on_record=_print_record
        )
    console.print(plain((out_dir / "table.md").read_text(encoding="utf-8")))
    console.print(f"summary: {safe(out_dir / 'summary.json')} ({len(result['runs'])} runs)")


def _open_eval_index(settings: Any, ds: Any, passages: Any, extract: str, chat_model: Any) -> Any:
    """The stack over ``passages`` (indexed now, or reused when already indexed), its summary printed."""
    from eval.multihop.corpus_index import open_indexed_stack

    console.print(f"indexing {len(passages)} passages of {safe(ds.name)} (extract={extract}) …")
    with index_progress_bar(console) as progress:
        stack, summary = open_indexed_stack(
            settings, ds, passages, extract=extract, chat_model=chat_model, progress=progress  # type: ignore[arg-type]
        )
    rate = f", {summary.chunks / summary.elapsed_s * 60:,.0f} chunks/min" if summary.chunks and summary.elapsed_s else ""
    console.print(safe(f"index: {summary.brief()}"[:400] + rate))
    return stack


def _qa_system(
    mode: str, retriever: Any, chat_model: Any, settings: Any, *, fold: bool, top_k: int, read_k: int
) -> Any:
    from eval.multihop.systems import AgentSystem, RetrieveAndRead

    if mode == "agent":
        from eval.agent_call import AgentCaller, run_eventfold_agent

        return AgentSystem(AgentCaller(run_eventfold_agent, settings, retriever, chat_model, fold=fold))
    return RetrieveAndRead(retriever, mode, chat_model, top_k=top_k, read_k=read_k,  # type: ignore[arg-type]
                           answer_max_tokens=settings.run.answer_max_tokens)  # fmt: skip


TasksOpt = Annotated[Path, typer.Option("--tasks", help="DeepResearch Bench II tasks_and_rubrics.jsonl.")]
LanguageOpt = Annotated[str | None, typer.Option("--language", help="en or zh.")]
ThemeOpt = Annotated[list[str] | None, typer.Option("--theme", help="Only these themes (repeatable).")]
IdxOpt = Annotated[list[int] | None, typer.Option("--idx", help="Only these task idx (repeatable).")]
ResearchCorpusOpt = Annotated[list[Path] | None, typer.Option("--corpus", help="Files/folders the agent researches.")]
IndexOpt = Annotated[str | None, typer.Option("--index", help="An existing EventRAG index to research.")]
WebUrlOpt = Annotated[
    str | None, typer.Option("--web-search-url", envvar="EVENTFOLD_WEB_SEARCH_URL", help="JSON search API.")
]
WebFlavorOpt = Annotated[str, typer.Option("--web-search-flavor", help="auto, searxng or brave.")]
WebKeyOpt = Annotated[
    str | None, typer.Option("--web-search-key-env", help="Environment variable holding the search API key.")
]
ReportsOpt = Annotated[
    Path | None, typer.Option("--reports", help="Judge existing reports <idx>.md from this folder instead.")
]
BatchOpt = Annotated[int, typer.Option("--batch-size", min=1, help="Rubric items per judge call.")]
RetriesOpt = Annotated[int, typer.Option("--max-retries", min=0, help="Re-asks for missing items.")]
NoReasonsOpt = Annotated[bool, typer.Option("--no-reasons", help="Judge gives scores only (faster).")]
ReportCharsOpt = Annotated[int, typer.Option("--max-report-chars", min=100)]
NoJudgeOpt = Annotated[bool, typer.Option("--no-judge", help="Write reports only.")]


@dataclass(frozen=True)
class ResearchSource:
    """What the agent researches for DRB: a corpus indexed now, an existing index, or a web search API."""

    corpus: list[Path] | None
    index: str | None
    extract: str
    web_url: str | None
    web_flavor: str
    web_key_env: str | None


@dataclass(frozen=True)
class RubricJudging:
    """The rubric judge's settings; ``enabled`` False writes reports only."""

    enabled: bool
    model: JudgeChoice
    batch_size: int
    max_retries: int
    with_reason: bool
    max_report_chars: int


@app.command("drb")
def drb_cmd(
    tasks: TasksOpt,
    language: LanguageOpt = None,
    theme: ThemeOpt = None,
    idx: IdxOpt = None,
    limit: LimitOpt = None,
    out: OutOpt = None,
    corpus: ResearchCorpusOpt = None,
    index: IndexOpt = None,
    extract: ExtractOpt = "llm",
    web_search_url: WebUrlOpt = None,
    web_search_flavor: WebFlavorOpt = "auto",
    web_search_key_env: WebKeyOpt = None,
    reports: ReportsOpt = None,
    no_fold: NoFoldOpt = False,
    judge_url: JudgeUrlOpt = None,
    judge_model: JudgeModelOpt = None,
    judge_key_env: JudgeKeyOpt = None,
    batch_size: BatchOpt = 50,
    max_retries: RetriesOpt = 3,
    no_reasons: NoReasonsOpt = False,
    max_report_chars: ReportCharsOpt = 150_000,
    no_judge: NoJudgeOpt = False,
    concurrency: ConcOpt = 1,
    config: ConfigOpt = None,
) -> None:
    """Write a report per task (agent over --corpus/--index or --web-search-url), judge it, aggregate."""
    from eval.deepresearch_bench.loader import TaskFormatError, load_tasks

    settings = load_settings(config)
    try:
        selected = load_tasks(tasks, language=language, themes=theme, idx=idx, limit=limit)
    except TaskFormatError as exc:
        _fail(str(exc))
        return
    if not selected:
        _fail("no task matches the filters")
    if sum(x is not None and x != [] for x in (corpus, index, web_search_url, reports)) != 1:
        _fail("give exactly one of --corpus, --index, --web-search-url or --reports")
    source = ResearchSource(corpus, index, extract, web_search_url, web_search_flavor, web_search_key_env)
    judging = RubricJudging(not no_judge, JudgeChoice(judge_url, judge_model, judge_key_env), batch_size,
                            max_retries, not no_reasons, max_report_chars)  # fmt: skip
    _run_drb(settings, selected, out or settings.runs_dir / "eval" / "drb", reports, source, not no_fold,
             judging, concurrency)  # fmt: skip


def _run_drb(settings: Any, selected: list, out_dir: Path, reports: Path | None, source: ResearchSource,
             fold: bool, judging: RubricJudging, concurrency: int) -> None:  # fmt: skip
    from eval.deepresearch_bench.runner import FolderReportWriter, run_drb

    with ExitStack() as cm:
        chat_model = None
        if reports is not None:
            writer: Any = FolderReportWriter(reports)
        else:
            from eval.agent_call import AgentCaller, run_eventfold_agent
            from eval.deepresearch_bench.runner import AgentReportWriter
            from eventfold.llm.factory import make_chat_model

            chat_model = make_chat_model(settings)
            backend = _drb_backend(settings, cm, chat_model, source)
            caller = AgentCaller(run_eventfold_agent, settings, backend, chat_model, fold=fold, report_mode="long")
            writer = AgentReportWriter(caller)
        rubric_judge, warning = _rubric_judge(settings, judging, chat_model) if judging.enabled else (None, None)
        console.print(f"DRB II: {len(selected)} tasks, writer {safe(writer.name)} → {safe(out_dir)}")
        summary = run_drb(
            selected, writer, rubric_judge, out_dir, concurrency=concurrency, on_record=_print_record,
            judge_warning=warning,
        )
    if summary is not None:
        console.print(plain((out_dir / "table.md").read_text(encoding="utf-8")))


def _rubric_judge(settings: Any, judging: RubricJudging, chat_model: Any) -> tuple[Any, str | None]:
    """(the judge, a warning when it is the small local model, whose scores measure nothing)."""
    from eval.deepresearch_bench.judge import RubricJudge

    judge_chat = judging.model.make(settings, fallback=chat_model)
    judge = RubricJudge(judge_chat, batch_size=judging.batch_size, max_retries=judging.max_retries,
                        max_report_chars=judging.max_report_chars, with_reason=judging.with_reason)  # fmt: skip
    warning = None
    if not judging.model.url and settings.llm.backend == "local":
        warning = (f"The judge is a small local model ({safe(judge_chat.name)} through llama.cpp): its scores "
                   "do not measure the reports; judge with --judge-url/--judge-model (a capable model "
                   "on any OpenAI-compatible server).")  # fmt: skip
        console.print(f"[yellow]{warning}[/yellow]")
    return judge, warning


def _drb_backend(settings: Any, cm: ExitStack, chat_model: Any, source: ResearchSource) -> Any:
    corpus, index, extract, url = source.corpus, source.index, source.extract, source.web_url
    if url:
        from agent.tools.web_search import WebSearchBackend, WebSearchClient, WebSearchSettings

        key = os.environ.get(source.web_key_env) if source.web_key_env else None
        client = WebSearchClient(WebSearchSettings(url=url, flavor=source.web_flavor, api_key=key))  # type: ignore[arg-type]
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
