"""`eventfold index PATH...` (EventRAG indexing) and `eventfold retrieve "query"` (EventRAG retrieval).

    eventfold index docs/ --extract rules --index mydocs            # embedded SQLite graph + Milvus Lite
    eventfold index docs/ --no-prune                                 # keep documents whose files are gone
    eventfold index docs/ --graph neo4j                              # graph in Neo4j (graph.uri from settings)
    eventfold index --delete docs/old.md --index mydocs              # remove one document
    eventfold retrieve "Who led the repairs?" --mode event --index mydocs --top-k 5
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer
from rich.table import Table

from cli.common import (
    console,
    err_console,
    fail,
    load_settings,
    plain,
    require_index,
    safe,
    setup_logging,
    store_failure,
)
from cli.index_progress import index_progress_bar
from cli.index_space import free_and_needed, out_of_space
from eventfold.settings import Settings

if TYPE_CHECKING:  # the CLI starts without importing the indexer
    from eventrag.index.summary import IndexSummary

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML settings file.")]
IndexOpt = Annotated[str | None, typer.Option("--index", "-i", help="Index name (default: settings `index`).")]
GraphOpt = Annotated[
    str | None, typer.Option("--graph", help="Graph store: embedded (SQLite file) | neo4j (graph.uri).")
]
MODES = ("naive", "graph", "event", "agentic")


def _settings(config: Path | None, index: str | None, graph: str | None) -> Settings:
    settings = load_settings(config, **({"index": index} if index else {}))
    if graph:
        if graph not in ("embedded", "neo4j"):
            fail("--graph must be embedded or neo4j", f"(got {graph!r})", code=2)
        settings = settings.model_copy(update={"graph": settings.graph.model_copy(update={"backend": graph})})
    return settings


def _model_configured(settings: Settings) -> bool:
    if settings.llm.backend == "openai":
        return True
    from eventfold.models import local_model_path

    try:
        local_model_path(settings)
    except Exception:
        return False
    return True


def _open(settings: Settings, extract: str, with_llm: bool):  # type: ignore[no-untyped-def]
    from eventrag.stack import open_stack
    from eventrag.storage.errors import StorageError

    chat = None
    if with_llm:
        from eventfold.llm.factory import make_chat_model
        from eventfold.llm.types import LLMError
        from eventfold.models import ModelNotFoundError

        try:
            chat = make_chat_model(settings)
        except (LLMError, ModelNotFoundError, ValueError) as exc:
            fail("cannot set up the LLM:", exc, code=2)
    try:
        return open_stack(settings, chat_model=chat, extract=extract)  # type: ignore[arg-type]
    except StorageError as exc:
        store_failure(exc, settings)


def index_cmd(
    paths: Annotated[list[Path] | None, typer.Argument(
        help="Files or folders (txt, md, json, jsonl; pdf with the pdf extra: pip install 'eventfold\\[pdf]').")] = None,
    extract: Annotated[str, typer.Option("--extract", help="llm | rules | auto (llm when a model is set up).")] = "auto",
    index: IndexOpt = None,
    graph: GraphOpt = None,
    delete: Annotated[list[str] | None, typer.Option("--delete", help="Remove this document id (repeatable).")] = None,
    prune: Annotated[bool, typer.Option("--prune/--no-prune",
                                        help="Remove documents whose files are gone from an indexed folder.")] = True,
    config: ConfigOpt = None,
) -> None:
    """Index documents into the EventRAG graph and vector stores (incremental and resumable).

    A document's id is <corpus name>/<path inside the corpus folder>, the same whichever folder it is
    reached through; re-indexing a folder removes what disappeared from it (unless --no-prune) and
    retries documents whose extraction failed."""
    setup_logging()
    if extract not in ("auto", "llm", "rules"):
        fail("--extract must be llm, rules or auto", f"(got {extract!r})", code=2)
    if not paths and not delete:
        err_console.print("[bold red]give at least one PATH to index or --delete DOC_ID[/]")
        raise typer.Exit(2)
    for p in paths or []:
        if not p.exists():
            fail(f"{p} does not exist", code=2)
    settings = _settings(config, index, graph)
    if extract == "auto":
        extract = "llm" if _model_configured(settings) else "rules"
    from eventrag.index.corpora import RegistryError
    from eventrag.storage.errors import StorageError

    try:
        with _open(settings, extract, with_llm=extract == "llm") as stack:
            for doc_id in delete or []:
                ok = stack.indexer.delete(doc_id)
                console.print(f"{'deleted' if ok else '[yellow]not indexed:[/]'} {safe(doc_id)}")
            if not paths:
                return
            summary = _index_and_heal(stack, settings, paths, prune)
    except (OSError, StorageError, sqlite3.Error, RegistryError) as exc:
        _index_failure(exc, settings, paths or [])
    _print_summary(summary, settings)
    if summary.docs_failed:
        raise typer.Exit(1)  # work left undone: a script must see it


def _index_and_heal(stack, settings: Settings, paths: list[Path], prune: bool):  # type: ignore[no-untyped-def]
    """Index `paths` into an index whose vectors agree with its graph (counts per kind). A damaged index
    (a store deleted or corrupted under the other) is rebuilt from `paths`; documents left pending by an
    interrupted run are first resumed by the indexer itself (that alone restores agreement)."""
    from eventrag.index.health import check_index

    def run():  # type: ignore[no-untyped-def]
        with index_progress_bar(err_console) as progress:
            return stack.indexer.index_paths(paths, progress=progress, prune=prune)

    health = check_index(stack.graph, stack.vectors, stack.indexer.collections)
    rebuilt = not health.ok and not health.pending
    if rebuilt:
        _reset_damaged(stack, settings, paths, health)
    summary = run()
    health = check_index(stack.graph, stack.vectors, stack.indexer.collections)
    if not health.ok and not rebuilt:
        _reset_damaged(stack, settings, paths, health)
        summary = run()
        health = check_index(stack.graph, stack.vectors, stack.indexer.collections)
    if not health.ok:
        fail(f"index '{settings.index}' still disagrees with its vectors after a rebuild:", "; ".join(health.problems()))
    return summary


def _reset_damaged(stack, settings: Settings, paths: list[Path], health) -> None:  # type: ignore[no-untyped-def]
    """Empty both stores of a damaged index for a rebuild from `paths`; when `paths` miss some indexed
    folder (its documents would be lost) exit 1 with the command that covers them all."""
    from eventrag.index.health import reset_index, uncovered_sources

    problems = "; ".join(health.problems())
    if uncovered_sources(health, paths):
        fail(f"index '{settings.index}' is damaged ({problems}):",
             f"rebuild it from every indexed folder: `{health.rebuild_command(settings.index, paths)}`", code=1)
    err_console.print(f"[yellow]index '{safe(settings.index)}' is damaged[/] ({safe(problems)}): rebuilding it from "
                      f"{safe(', '.join(str(p) for p in paths))}", soft_wrap=True)
    reset_index(stack.graph, stack.vectors, stack.indexer.collections, stack.embedder.dim)


def _index_failure(exc: Exception, settings: Settings, paths: list[Path]) -> NoReturn:
    """A full disk names the store and the space needed; a broken corpus registry or another store
    failure its message; anything else is a bug and keeps its traceback."""
    from eventrag.index.corpora import RegistryError
    from eventrag.storage.errors import StorageError, StoreLocked

    store = out_of_space(exc, settings)
    if store is not None:
        free, needed = free_and_needed(settings, paths)
        fail(f"index '{settings.index}': out of disk space writing the {store}:",
             f"{free / 1e6:,.0f} MB free there; indexing these files needs about {needed / 1e6:,.0f} MB. Free "
             "space (or set EVENTFOLD_HOME to a larger disk) and run the same command again: finished documents "
             "are kept and the rest resume.", code=1)
    if isinstance(exc, RegistryError):
        fail("cannot index:", exc, code=1)
    if isinstance(exc, StoreLocked):
        store_failure(exc, settings)
    if isinstance(exc, StorageError):
        fail(f"index '{settings.index}': a store failed:", f"{exc}. Finished documents are kept; run the same "
             "command again to resume.", code=1)
    raise exc


def _print_summary(summary: IndexSummary, settings: Settings) -> None:
    table = Table(title=plain(f"index '{settings.index}' ({settings.graph.backend} graph, {summary.extractor} extraction)"))
    table.add_column("what")
    table.add_column("count", justify="right")
    rows = [("documents seen", summary.docs_seen), ("indexed", summary.docs_indexed),
            ("unchanged (skipped)", summary.docs_unchanged), ("resumed after a crash", summary.docs_resumed),
            ("retried (extraction had failed)", summary.docs_retried),
            ("left pending (extraction failed)", summary.docs_failed),
            ("pruned (files gone)", summary.docs_pruned),
            ("files skipped", len(summary.skipped)), ("chunks", summary.chunks),
            ("chunks failed", summary.chunks_failed), ("events", summary.events), ("entities (new)", summary.entities),
            ("entity merges", summary.entity_merges), ("edges", summary.edges),
            ("inferred edges", summary.inferred_edges), ("LLM calls", summary.llm_calls),
            ("LLM calls from cache", summary.llm_cached)]
    for what, n in rows:
        table.add_row(what, f"{n:,}")
    table.add_row("time", f"{summary.elapsed_s:.1f}s")
    if summary.chunks and summary.elapsed_s > 0:
        table.add_row("throughput", f"{summary.chunks / summary.elapsed_s * 60:,.0f} chunks/min, "
                                    f"{summary.events / summary.elapsed_s:,.1f} events/s")
    console.print(table)
    lines = [f"[yellow]skipped[/] {safe(s.reason)}" for s in summary.skipped]
    lines += [f"[yellow]note[/] {safe(n)}" for n in summary.notes[:20]]
    if len(summary.notes) > 20:
        lines.append(f"[yellow]note[/] … and {len(summary.notes) - 20:,} more")
    lines += [f"[yellow]extraction failed[/] {safe(f)}" for f in summary.failures]
    lines += [f"[yellow]pending[/] {safe(d)}: extraction failed; the next `eventfold index` retries it"
              for d in summary.failed_docs]
    lines += [f"[dim]pruned[/] {safe(d)} (its file is gone)" for d in summary.pruned]
    for line in lines:
        err_console.print(line, soft_wrap=True)


def register(app: typer.Typer) -> None:
    app.command("index")(index_cmd)
    app.command("retrieve")(retrieve_cmd)


def retrieve_cmd(
    query: Annotated[str, typer.Argument(help="The question.")],
    mode: Annotated[str, typer.Option("--mode", "-m", help="naive | graph | event | agentic.")] = "event",
    top_k: Annotated[int, typer.Option("--top-k", "-k", min=1, max=100)] = 5,
    llm: Annotated[bool, typer.Option("--llm/--no-llm", help="Agentic mode: LLM decomposition/reflection.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
    index: IndexOpt = None,
    graph: GraphOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Retrieve evidence chunks for a question from an index built by `eventfold index`.

    With --mode agentic --llm, an LLM that fails is reported (warning; exit 1 when no call
    answered) and the rules stand in for decomposition and reflection."""
    setup_logging()
    if mode not in MODES:
        fail(f"--mode must be one of {', '.join(MODES)}", f"(got {mode!r})", code=2)
    if not query.strip():
        err_console.print("[bold red]the query is empty[/]")
        raise typer.Exit(2)
    settings = _settings(config, index, graph)
    with _open(settings, "rules", with_llm=llm) as stack:
        require_index(stack, settings)  # empty or damaged: said, exit 1
        # one query: searching the stores once is cheaper than loading the matrices and event graph
        stack.retriever.cache.config = replace(stack.retriever.cache.config, memory_vectors=False, memory_graph=False)
        result = stack.retriever.retrieve(query, mode=mode, top_k=top_k)  # type: ignore[arg-type]
    if as_json:
        console.print_json(json.dumps(result.model_dump()), ensure_ascii=True)  # \u escapes: no raw C1
    else:
        llm_note = f"{result.llm_calls} LLM call(s)" + (f", {len(result.llm_errors)} failed" if result.llm_errors else "")
        table = Table(title=plain(f"{mode}: {len(result.chunks)} chunks, {result.rounds} round(s), "
                                 f"{llm_note}, {result.elapsed_s * 1000:.0f} ms"))
        for col in ("#", "score", "document", "round", "path", "text"):
            table.add_column(col, overflow="fold")
        for i, c in enumerate(result.chunks, 1):  # document text and ids are data: plain Text, never markup
            table.add_row(str(i), f"{c.score:.3f}", plain(c.doc_id), str(c.round), plain(" → ".join(c.path)[:160]),
                          plain((c.title + ": " if c.title else "") + c.text[:200].replace("\n", " ")))
        console.print(table)
    if result.llm_errors:
        err_console.print(f"[yellow]warning:[/] {len(result.llm_errors)} LLM call(s) failed, "
                          f"{result.llm_calls} answered; decomposition/reflection fell back to rules: "
                          f"{safe(result.llm_errors[0])}", soft_wrap=True)
        if result.llm_calls == 0:
            raise typer.Exit(1)

