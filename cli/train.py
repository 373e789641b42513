"""`eventfold train sft-data|sft|rl --config run.toml [--dry-run]`.

Run configs are TOML files (``training.config``; examples in ``training/configs/``). ``--dry-run``
validates the config, the model folder, the questions and — for RL — the accelerate / DeepSpeed /
FSDP launch files and TRL's batch arithmetic, prints the launch command and exits. A multi-process
RL config (``launch.num_processes > 1`` or an accelerate config) is started through
``accelerate launch -m training.launch rl``.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from cli.common import console, err_console, fail, needs_extras, safe

app = typer.Typer(no_args_is_help=True)

ConfigOpt = Annotated[Path, typer.Option("--config", "-c", help="run config (TOML)", exists=False)]
ReportOpt = Annotated[
    Literal["none", "tensorboard"] | None,
    typer.Option("--report-to", help="metrics backend (overrides report_to): tensorboard writes OUTPUT_DIR/tb"),
]
ResumeOpt = Annotated[
    bool | None, typer.Option("--resume/--no-resume", help="continue from the last checkpoint (overrides resume)")
]
StepsOpt = Annotated[
    int | None,
    typer.Option("--max-steps", min=1, help="stop after this step (overrides grpo.max_steps); a run resumed at or "
                 "past it trains nothing and saves its last checkpoint's model as final"),
]
SeedOpt = Annotated[
    int | None, typer.Option("--seed", help="the run's seed (overrides grpo.seed); give it its own --output-dir")
]
OutOpt = Annotated[
    Path | None,
    typer.Option("--output-dir", help="where checkpoints, log and final go (overrides output_dir): one folder per seed"),
]
DryOpt = Annotated[bool, typer.Option("--dry-run", help="validate config, data and launch files; do not train")]


@app.callback()
def _group() -> None:
    """Train the agent: SFT data from a teacher, SFT, then RL (GRPO + SIRAS) in the research environment."""


def _load(path: Path, kind: str) -> Any:
    from training.config import ConfigError, RLRunConfig, SFTRunConfig, load_config

    try:
        return load_config(path, SFTRunConfig if kind == "sft" else RLRunConfig)
    except ConfigError as exc:
        fail("config error:", exc, code=2)


def _report_check(check: Any) -> None:
    for note in check.notes:
        console.print(f"  · {safe(note)}")
    for problem in check.problems:
        err_console.print(f"  [bold red]✗[/] {safe(problem)}")
    console.print(f"launch: {safe(' '.join(check.command))}")
    if not check.ok:
        raise typer.Exit(1)
    console.print("[green]dry run ok[/]")


@app.command("sft-data")
@needs_extras("eventfold train sft-data")
def sft_data_cmd(config: ConfigOpt) -> None:
    """Run the teacher agent on the training questions; keep correct trajectories with valid folds."""
    from training.launch import build_sft_data

    cfg = _load(config, "sft")
    try:
        manifest = build_sft_data(cfg)
    except (ValueError, FileNotFoundError) as exc:
        fail("error:", exc, code=2)
    console.print(
        f"{manifest.accepted}/{manifest.trajectories} trajectories kept ({manifest.acceptance_rate:.0%}), "
        f"{manifest.rows} rows, {manifest.folds} folds, {manifest.unfolds} unfolds -> {cfg.data_dir}"
    )
    if manifest.rejection_reasons:
        console.print(f"rejected: {safe(manifest.rejection_reasons)}")


@app.command("sft")
@needs_extras("eventfold train sft")
def sft_cmd(config: ConfigOpt, dry_run: DryOpt = False) -> None:
    """Supervised fine-tuning on the chat-with-tools dataset (assistant-only loss, optional LoRA)."""
    from training.launch import check_sft, train_sft

    cfg = _load(config, "sft")
    if dry_run:
        _report_check(check_sft(cfg))
        return
    try:
        res = train_sft(cfg)
    except (ValueError, FileNotFoundError) as exc:
        fail("error:", exc, code=2)
    console.print(f"SFT: {res.global_step} steps on {res.rows} rows, loss {res.train_loss}; model -> {safe(res.final_dir)}")
    _serve_hint(res.final_dir)


@app.command("rl")
@needs_extras("eventfold train rl")
def rl_cmd(config: ConfigOpt, dry_run: DryOpt = False, report_to: ReportOpt = None, resume: ResumeOpt = None,
           max_steps: StepsOpt = None, seed: SeedOpt = None, output_dir: OutOpt = None) -> None:  # fmt: skip
    """GRPO with SIRAS advantages in the multi-turn research environment."""
    from training.config import ConfigError
    from training.launch import check_rl_launch, rl_override_args, rl_overrides, train_rl

    try:
        cfg = rl_overrides(_load(config, "rl"), report_to, resume, max_steps, seed, output_dir)
    except (ConfigError, ValueError) as exc:
        fail("config error:", exc, code=2)
    check = check_rl_launch(cfg, config)
    check.command += rl_override_args(report_to, resume, max_steps, seed, output_dir and cfg.output_dir)
    if dry_run:
        _report_check(check)
        return
    if not check.ok:
        _report_check(check)
    distributed = "LOCAL_RANK" in os.environ or "WORLD_SIZE" in os.environ
    if check.command[0] == "accelerate" and not distributed:
        console.print(f"starting: {safe(' '.join(check.command))}")
        raise typer.Exit(subprocess.call(check.command))
    _report_start(cfg)
    try:
        res = train_rl(cfg)
    except (ValueError, FileNotFoundError) as exc:
        fail("error:", exc, code=2)
    console.print(f"RL: {res.global_step} steps; log {safe(res.log_path)}; model -> {safe(res.final_dir)}")
    _serve_hint(res.final_dir)


def _report_start(cfg: Any) -> None:
    """Which checkpoint the run resumes from and how many steps remain; where TensorBoard reads."""
    from training.rl.run import resume_point, tensorboard_dir

    point = resume_point(cfg)
    if point.checkpoint is not None:
        left = (f"{point.remaining} of {cfg.grpo.max_steps} steps remain" if point.remaining else
                f"max_steps {cfg.grpo.max_steps} reached, nothing to train: its model is saved as final")
        console.print(f"resuming from {safe(point.checkpoint)} (step {point.step}): {left}")
    else:
        why = ("--no-resume / resume = false" if not cfg.resume else "async_rollouts do not resume"
               if cfg.async_rollouts else f"no checkpoint in {safe(cfg.output_dir)}")
        console.print(f"starting at step 0 ({why}): {cfg.grpo.max_steps} steps")
    if cfg.report_to == "tensorboard":
        console.print(f"TensorBoard: tensorboard --logdir {safe(tensorboard_dir(cfg))}")


def _serve_hint(final_dir: Path) -> None:
    from eventfold.llm.gguf_generator import exported_gguf

    how = ("through llama.cpp over its GGUF export" if exported_gguf(final_dir) is not None else
           f"(transformers), faster on a CPU after: eventfold model export {safe(final_dir)}")  # fmt: skip
    console.print(f"serve it: eventfold ask --model {safe(final_dir)} \"question\" {how}", soft_wrap=True)
