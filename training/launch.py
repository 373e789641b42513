"""Config-file entry points of the training pipeline (used by `eventfold train ...` and by
`accelerate launch -m training.launch rl --config ...` on several GPUs).

- ``build_sft_data``: questions + indexed corpus + teacher -> SFT dataset (``training.sft.data``);
- ``train_sft``: ``training.sft.train.run_sft``;
- ``train_rl``: questions + indexed corpus -> ``training.rl.run.run_rl``;
- ``check_rl_launch`` / ``check_sft``: the dry run: validate the config, the model folder, the
  questions, the accelerate / DeepSpeed / FSDP files and the batch arithmetic TRL requires, and
  build the exact launch command, without training.
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel, Field

from training.config import RLRunConfig, SFTRunConfig, load_config


class LaunchCheck(BaseModel):
    ok: bool
    problems: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    world_size: int = 1
    command: list[str] = Field(default_factory=list)


# --- SFT ------------------------------------------------------------------------------------------


def teacher_model(cfg: SFTRunConfig) -> Any:
    from training.corpus import corpus_settings

    if cfg.teacher.backend == "hf":
        from trl.chat_template_utils import add_response_schema

        from eventfold.llm.transformers_backend import HFChatModel
        from training.common.loading import load_model_and_tokenizer
        from training.sft.train import ensure_model

        model, tok = load_model_and_tokenizer(ensure_model(cfg.model))
        return HFChatModel(add_response_schema(tok), model, name=f"hf:{Path(cfg.model.label).name}")
    from eventfold.llm.factory import make_chat_model

    return make_chat_model(corpus_settings(cfg.corpus)) if cfg.corpus else make_chat_model(_settings())


def _settings() -> Any:
    from eventfold.settings import Settings

    return Settings()


def build_sft_data(cfg: SFTRunConfig) -> Any:
    """Run the teacher agent on the configured questions and write the dataset to ``cfg.data_dir``:
    the LLM teacher's rejection-sampled trajectories, mixed with the oracle's per ``teacher.oracle_fill``."""
    from eventfold.llm.transformers_backend import HFChatModel
    from training.common.loading import load_tokenizer
    from training.corpus import corpus_settings, load_questions, open_backend
    from training.sft.data import agent_run_fn, write_dataset
    from training.sft.teachers import OracleTeacher, mixed_trajectories, oracle_plans, slip_questions
    from training.sft.train import ensure_model

    if cfg.questions is None or cfg.corpus is None:
        raise ValueError("sft-data needs [questions] and [corpus] sections in the config")
    t = cfg.teacher
    questions, dataset = load_questions(cfg.questions)
    options = corpus_settings(cfg.corpus).run_options(**t.run.model_dump())
    log = _partial_log(cfg)  # refuses a record of another configuration before any model loads
    if t.backend == "workflow":
        return _workflow_data(cfg, questions, dataset, options, log)
    llm = None if t.backend == "oracle" else teacher_model(cfg)
    oracle = None
    if t.backend == "oracle" or t.oracle_fill != "none":
        counter = HFChatModel(load_tokenizer(ensure_model(cfg.model)))  # budget in student tokens
        oracle = OracleTeacher(counter, oracle_plans(questions, dataset), slip_questions(questions, t.oracle_slips))
    with open_backend(cfg.corpus, dataset) as backend:
        trajs = mixed_trajectories(
            questions, agent_run_fn(backend, options), llm=llm, llm_n=t.llm_questions, oracle=oracle,
            fill="all" if t.backend == "oracle" else t.oracle_fill, accept=cfg.accept,
            workers=t.workers, log=log,
        )
    return write_dataset(trajs, cfg.data_dir, source=str(cfg.questions.path), cfg=cfg.accept)


def _workflow_data(cfg: SFTRunConfig, questions: list[Any], dataset: Any, options: Any, log: Any) -> Any:
    """The workflow teacher (``training.sft.teachers.MemoryWorkflow``) on the questions, then on long tasks
    built from them (``[teacher.long_tasks]``, their own step cap); its reader is ``Settings.llm``, its
    token counts the student's."""
    from eventfold.llm.transformers_backend import HFChatModel
    from training.common.loading import load_tokenizer
    from training.corpus import open_backend
    from training.sft.data import write_dataset
    from training.sft.teachers import (
        CountedBy,
        MemoryWorkflow,
        long_questions,
        policy_run_fn,
        policy_teacher,
        policy_trajectories,
    )
    from training.sft.train import ensure_model

    assert cfg.corpus is not None and cfg.questions is not None
    t, lt = cfg.teacher, cfg.teacher.long_tasks
    if lt.count and dataset is None:
        raise ValueError("[teacher.long_tasks] needs a dataset folder or file as [questions] path "
                         "(its passages make the cross-reference items)")
    tasks = long_questions(dataset, lt.count, lt.k, lt.cross_refs, lt.seed) if lt.count else []
    model = CountedBy(teacher_model(cfg), HFChatModel(load_tokenizer(ensure_model(cfg.model))))
    long_options = options.model_copy(update={"max_steps": max(options.max_steps, lt.max_steps)})
    log.expect(policy_teacher(MemoryWorkflow), [*questions, *tasks])  # the total, resumed ones first
    with open_backend(cfg.corpus, dataset) as backend:
        trajs = [traj for qs, opts in ((questions, options), (tasks, long_options)) if qs
                 for traj in policy_trajectories(qs, policy_run_fn(backend, model, opts), MemoryWorkflow,
                                                 workers=t.workers, log=log)]  # fmt: skip
    return write_dataset(trajs, cfg.data_dir, source=str(cfg.questions.path), cfg=cfg.accept)


def _partial_log(cfg: SFTRunConfig) -> Any:
    """The run's partial record in ``cfg.data_dir`` (``training.sft.resume``), resumed per ``cfg.resume``."""
    from training.sft.data import judge
    from training.sft.resume import PARTIAL, TrajectoryLog, data_config

    def describe(traj: Any) -> str:
        v = judge(traj, cfg.accept)
        c = traj.run.counters
        return (f"{traj.question_id}: {'kept' if v.accepted else 'rejected'} ({v.reason}); "
                f"{len(traj.run.steps)} steps, {c.folds} folds, peak {c.peak_context_tokens} tokens")  # fmt: skip

    return TrajectoryLog(cfg.data_dir / PARTIAL, data_config(cfg), resume=cfg.resume, describe=describe,
                         out=lambda line: print(line, flush=True))  # fmt: skip


def train_sft(cfg: SFTRunConfig) -> Any:
    from training.sft.train import run_sft

    return run_sft(cfg)


def _check_questions(section: Any, problems: list[str], notes: list[str]) -> None:
    from training.corpus import load_questions

    try:
        qs, _ = load_questions(section)
        notes.append(f"{len(qs)} training questions")
    except (ValueError, OSError) as exc:
        problems.append(f"questions: {exc}")


def check_sft(cfg: SFTRunConfig) -> LaunchCheck:
    problems: list[str] = []
    notes: list[str] = []
    elsewhere = cfg.optim.bf16 and not torch.cuda.is_available()  # a GPU run, validated off its machine
    if not cfg.model.is_available() and not cfg.model.build_tiny:
        message = f"model {cfg.model.label} holds no model (no config.json, .gguf file or pulled packaged model)"
        if elsewhere:  # the weights live on the GPU machine
            notes.append(message + " here: it must exist on the GPU machine")
        else:
            problems.append(message + " and build_tiny is off")
    if cfg.questions is not None:
        _check_questions(cfg.questions, problems, notes)
    if not (cfg.data_dir / "train.jsonl").is_file():
        notes.append(f"{cfg.data_dir}/train.jsonl does not exist yet: run `eventfold train sft-data` first")
    notes += [f"{d}/train.jsonl does not exist yet: build it with its own sft-data config"
              for d in cfg.extra_data_dirs if not (d / "train.jsonl").is_file()]
    if elsewhere:
        notes.append("bf16 requested but no CUDA device here (fine for a GPU launch)")
    cmd = [sys.executable, "-m", "training.launch", "sft", "--config", "<config>"]
    return LaunchCheck(ok=not problems, problems=problems, notes=notes, command=cmd)


# --- RL -------------------------------------------------------------------------------------------


def rl_overrides(
    cfg: RLRunConfig, report_to: str | None = None, resume: bool | None = None, max_steps: int | None = None,
    seed: int | None = None, output_dir: Path | None = None,
) -> RLRunConfig:
    """``cfg`` with the command line's ``--report-to`` / ``--resume`` / ``--max-steps`` / ``--seed`` /
    ``--output-dir`` (None: the config's), re-validated. A smaller ``max_steps`` than a checkpoint holds ends
    a resumed run there: it trains no step and saves the checkpoint's model as ``final`` (a long run stopped
    early still serves). Another seed of a config goes to its own ``--output-dir``: resuming the first
    seed's checkpoints with it is refused (``training.rl.resume``)."""
    out = output_dir.expanduser().resolve() if output_dir is not None else None  # as given on the command line
    updates: dict[str, Any] = {k: v for k, v in (("report_to", report_to), ("resume", resume), ("output_dir", out))
                               if v is not None}  # fmt: skip
    grpo = {k: v for k, v in (("max_steps", max_steps), ("seed", seed)) if v is not None}
    if grpo:
        updates["grpo"] = {**cfg.grpo.model_dump(), **grpo}
    return RLRunConfig.model_validate({**dict(cfg), **updates}) if updates else cfg


def rl_override_args(report_to: str | None = None, resume: bool | None = None, max_steps: int | None = None,
                     seed: int | None = None, output_dir: Path | None = None) -> list[str]:  # fmt: skip
    """The same overrides as ``training.launch`` arguments (for the ``accelerate launch`` command)."""
    pairs = (("--report-to", report_to), ("--max-steps", max_steps), ("--seed", seed), ("--output-dir", output_dir))
    resume_arg = [] if resume is None else ["--resume" if resume else "--no-resume"]
    return [a for flag, v in pairs if v is not None for a in (flag, str(v))] + resume_arg


def train_rl(cfg: RLRunConfig) -> Any:
    from training.corpus import load_questions, open_backend
    from training.rl.run import run_rl

    questions, dataset = load_questions(cfg.questions)
    with open_backend(cfg.corpus, dataset) as backend:
        return run_rl(cfg, questions, backend)


def _accelerate_checks(name: str, cfg: RLRunConfig, problems: list[str], notes: list[str]) -> int:
    from training.rl.configs import accelerate_config_path, load_accelerate_config

    try:
        path = accelerate_config_path(name)
        acc = load_accelerate_config(name)
    except (OSError, ValueError) as exc:  # missing file, bad YAML, bad distributed type / stage
        problems.append(f"launch.accelerate_config: {exc}")
        return cfg.launch.num_processes
    kind = acc["distributed_type"]
    world = int(acc["num_processes"]) * int(acc.get("num_machines", 1))
    if cfg.launch.num_processes not in (1, world):
        notes.append(f"launch.num_processes={cfg.launch.num_processes} overrides {path.name}'s {world} processes")
        world = cfg.launch.num_processes
    if acc.get("mixed_precision") == "bf16" and not cfg.grpo.bf16:
        notes.append(f"{path.name} uses bf16 mixed precision; grpo.bf16 is off")
    notes.append(f"{path.name}: {kind}, {world} processes")
    if kind == "DEEPSPEED":
        ds = acc.get("deepspeed_config") or {}
        notes.append(f"DeepSpeed ZeRO stage {ds.get('zero_stage')}")
        if ds.get("zero_stage") == 3 and cfg.lora.enabled:
            notes.append("ZeRO-3 with LoRA: the merged model is gathered on save (zero3_save_16bit_model)")
        if importlib.util.find_spec("deepspeed") is None:
            notes.append("deepspeed is not installed here (needed on the GPU machines)")
    if kind == "FSDP":
        fsdp = acc.get("fsdp_config") or {}
        if not fsdp:
            problems.append(f"{path}: FSDP needs an fsdp_config section")
        if cfg.lora.enabled and fsdp.get("fsdp_use_orig_params") is False:
            problems.append(f"{path}: LoRA under FSDP needs fsdp_use_orig_params: true")
    return world


def check_rl_launch(cfg: RLRunConfig, config_path: Path | None = None) -> LaunchCheck:
    """Validate everything a (multi-GPU) RL launch needs, without loading the model or training."""
    from trl import GRPOConfig

    from training.rl.run import grpo_args

    problems: list[str] = []
    notes: list[str] = []
    _check_model_and_questions(cfg, problems, notes)
    _check_resume(cfg, problems)
    world = cfg.launch.num_processes
    if cfg.launch.accelerate_config is not None:
        world = _accelerate_checks(cfg.launch.accelerate_config, cfg, problems, notes)
    _check_generation_batch(cfg, world, problems, notes)
    vllm = _check_rollout(cfg, world, problems, notes)
    if (cfg.grpo.bf16 or vllm) and not torch.cuda.is_available():
        notes.append("bf16/vLLM need CUDA: fine for the GPU launch, not runnable on this machine")
    try:
        args: GRPOConfig = grpo_args(cfg, world_size=world)
        notes.append(f"GRPOConfig valid (loss {args.loss_type}, generation batch {args.generation_batch_size})")
    except (ValueError, TypeError, OSError) as exc:
        problems.append(f"GRPOConfig: {exc}")
    return LaunchCheck(ok=not problems, problems=problems, notes=notes, world_size=world,
                       command=_rl_command(cfg, world, config_path))  # fmt: skip


def _check_model_and_questions(cfg: RLRunConfig, problems: list[str], notes: list[str]) -> None:
    multi = cfg.launch.accelerate_config is not None or cfg.launch.num_processes > 1
    if not cfg.model.is_available() and not cfg.model.build_tiny:
        message = f"model {cfg.model.label} holds no model (no config.json, .gguf file or pulled packaged model)"
        if multi:  # the weights live on the GPU machines
            notes.append(message + " here: it must exist on the launch machines")
        else:
            problems.append(message + " and build_tiny is off")
    _check_questions(cfg.questions, problems, notes)


def _check_resume(cfg: RLRunConfig, problems: list[str]) -> None:
    from training.rl.resume import check_resume
    from training.rl.run import resume_point

    try:
        checkpoint = resume_point(cfg).checkpoint
    except (ValueError, OSError):  # an unknown rollout config: _check_rollout reports it
        return
    try:
        check_resume(cfg, checkpoint)
    except ValueError as exc:
        problems.append(f"resume: {exc}")


def _check_generation_batch(cfg: RLRunConfig, world: int, problems: list[str], notes: list[str]) -> None:
    """TRL needs the generation batch (all processes, all accumulation steps) to hold whole groups."""
    g = cfg.grpo
    global_batch = g.per_device_train_batch_size * world * g.gradient_accumulation_steps
    if global_batch % g.num_generations:
        problems.append(
            f"generation batch {global_batch} (= {g.per_device_train_batch_size} per device x {world} processes x "
            f"{g.gradient_accumulation_steps} accumulation) is not divisible by num_generations={g.num_generations}"
        )
    else:
        notes.append(f"{global_batch // g.num_generations} prompts x {g.num_generations} rollouts per generation batch")


def _check_rollout(cfg: RLRunConfig, world: int, problems: list[str], notes: list[str]) -> bool:
    """Check ``launch.rollout``; True when it generates with vLLM."""
    from training.rl.configs import load_rollout_settings

    try:
        rollout = load_rollout_settings(cfg.launch.rollout)
    except (OSError, ValueError) as exc:
        problems.append(f"launch.rollout: {exc}")
        return False
    if rollout.mode in ("llama_cpp", "agent"):
        if cfg.async_rollouts and rollout.mode == "agent":
            problems.append("launch.rollout agent runs its own loop: set async_rollouts = false")
        if not cfg.lora.enabled or cfg.lora.modules_to_save:
            problems.append(f"launch.rollout {rollout.mode} applies a LoRA adapter over the base GGUF: set [lora] "
                            "enabled = true without modules_to_save")
        if importlib.util.find_spec("llama_cpp") is None:
            notes.append("llama-cpp-python is not installed here (the `local` extra)")
        return False
    if rollout.mode == "none":
        return False
    if importlib.util.find_spec("vllm") is None:
        notes.append("vllm is not installed here (needed on the GPU machines)")
    if rollout.mode == "server":
        notes.append("vLLM server mode: start `trl vllm-serve --model <model.path>` on the generation GPUs first")
    if rollout.mode == "colocate" and rollout.tensor_parallel_size > world:
        problems.append(f"vLLM tensor_parallel_size {rollout.tensor_parallel_size} > {world} processes")
    return True


def _rl_command(cfg: RLRunConfig, world: int, config_path: Path | None) -> list[str]:
    """The command that runs this launch: plain Python for one process, else ``accelerate launch``."""
    run = ["-m", "training.launch", "rl", "--config", str(config_path or "<config>")]
    if world <= 1 and cfg.launch.accelerate_config is None:
        return [sys.executable, *run]
    cmd = ["accelerate", "launch"]
    if cfg.launch.accelerate_config is not None:
        from training.rl.configs import accelerate_config_path

        try:
            cmd += ["--config_file", str(accelerate_config_path(cfg.launch.accelerate_config))]
        except OSError:
            cmd += ["--config_file", cfg.launch.accelerate_config]
    return [*cmd, "--num_processes", str(world), *run]


def main(argv: list[str] | None = None) -> None:
    """``python -m training.launch {sft,rl,sft-data} --config X`` (what `accelerate launch` runs)."""
    p = argparse.ArgumentParser(prog="training.launch")
    p.add_argument("what", choices=["sft", "rl", "sft-data"])
    p.add_argument("--config", required=True, type=Path)
    p.add_argument("--report-to", choices=["none", "tensorboard"], default=None, help="rl: override report_to")
    p.add_argument("--resume", action=argparse.BooleanOptionalAction, default=None, help="rl: override resume")
    p.add_argument("--max-steps", type=int, default=None, help="rl: override [grpo] max_steps")
    p.add_argument("--seed", type=int, default=None, help="rl: override [grpo] seed")
    p.add_argument("--output-dir", type=Path, default=None, help="rl: override output_dir")
    a = p.parse_args(argv)
    if a.what == "rl":
        cfg = rl_overrides(load_config(a.config, RLRunConfig), a.report_to, a.resume, a.max_steps, a.seed, a.output_dir)
        print(train_rl(cfg).model_dump_json(indent=1))
    elif a.what == "sft":
        print(train_sft(load_config(a.config, SFTRunConfig)).model_dump_json(indent=1))
    else:
        print(build_sft_data(load_config(a.config, SFTRunConfig)).model_dump_json(indent=1))


if __name__ == "__main__":
    main()
