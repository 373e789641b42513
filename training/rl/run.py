"""The RL loop: the research environment + the GRPO trainer (SIRAS advantages by default).

Wiring (TRL 1.16 hooks): ``environment_factory`` makes one ``ResearchEnv`` per rollout (the agent's
tools over the indexed corpus); TRL's multi-turn tool loop generates, runs the tools, appends their
results (masked from the loss by ``tool_mask``) and generates again; ``research_reward`` scores each
episode and logs its metrics; the trainer class is ``training.rl.trainer`` with the advantage estimator
named by ``advantage.method`` (``training.rl.advantages``: grpo, siras and its ablations). On GPU,
``launch.rollout`` (``training.rl.configs``: ``vllm_colocate`` / ``vllm_server``) turns on TRL's vLLM
generation.

Logged every step (``log.jsonl`` in the output folder, TRL's names): ``reward``, ``episode/em``,
``episode/f1``, ``episode/folds``, ``episode/unfolds``, ``episode/fold_rate``, ``episode/unfold_rate``,
``episode/valid_call_rate``, ``episode/peak_context_tokens``, ``frac_reward_zero_std`` (degenerate
groups), ``entropy``, ``kl`` (when ``beta`` > 0), ``step_time``, and ``schedule/cluster`` when adaptive
scheduling is on. With ``report_to = "tensorboard"`` the same metrics go, as the run trains, to
TensorBoard event files in ``output_dir/tb``; the run's config is saved as ``output_dir/run_config.json``.
``resume`` (on by default) continues from the last checkpoint in ``output_dir`` (``resume_point``).

Adaptive data scheduling (``training.rl.schedule``) replaces TRL's repeat sampler with one that asks
the UCB scheduler for the next questions; rewards are fed back per group from the reward function,
and the scheduler advances once per optimiser step. The data loader prefetches one generation batch,
so a re-choice takes effect one batch later. With several processes the rewards are gathered first,
so every process makes the same choice.

Asynchronous rollouts (``async_rollouts = true``, settings in ``[pipeline]``): rollout worker threads run
this same multi-turn tool loop (TRL's generation on their own copy of the policy) and feed a
bounded-staleness queue; the learner of ``training.rl.pipeline`` trains with the configured estimator,
importance-weighting samples up to ``max_lag`` policy versions old (``training.rl.pipeline.research``,
whose rollout workers generate with trainers built by ``build_rl_trainer``).
Full-parameter, one process; the throughput of the async schedule is measured by ``bench/async_rl.py``.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel
from torch.utils.data import Sampler
from transformers import TrainerCallback

from agent import prompts
from eventfold.llm.transformers_backend import HFChatModel
from training.common.loading import load_model_and_tokenizer
from training.common.time_budget import TimeBudget
from training.config import RLRunConfig
from training.rl.env import ResearchEnv, research_reward
from training.rl.opener import force_call_opener, opener_text
from training.rl.pipeline.research import run_rl_async
from training.rl.result import RUN_CONFIG, RLResult
from training.rl.resume import check_resume
from training.rl.schedule import Scheduler, cluster_questions
from training.rl.tool_parse import with_text_call_repair
from training.sft.data import TrainingQuestion
from training.sft.train import ensure_model, last_checkpoint, peft_config

log = logging.getLogger(__name__)


def rl_rows(
    questions: list[TrainingQuestion],
    context_budget: int,
    status: Callable[[TrainingQuestion], str] | None = None,
) -> list[dict[str, Any]]:
    """Dataset rows as the agent's first turn looks: its system prompt, the question and (with
    ``status``) the status line; the gold answers go to the environment."""
    system = prompts.SYSTEM_FOLD.format(budget=context_budget)

    def prompt(q: TrainingQuestion) -> list[dict[str, str]]:
        msgs = [{"role": "system", "content": system}, {"role": "user", "content": q.question}]
        return msgs + ([{"role": "user", "content": status(q)}] if status is not None else [])

    return [
        {
            "prompt": prompt(q),
            "question": q.question,
            "answer": q.golds,
            "qid": q.id,
            "qidx": i,
        }
        for i, q in enumerate(questions)
    ]


def trainer_class(method: str) -> type:
    """The trainer for an advantage estimator: every registered estimator (``grpo`` included) runs in
    the same ``SirasGRPOTrainer`` plumbing, so methods differ only in their advantages."""
    from training.rl.advantages import get_adv_est
    from training.rl.trainer import SirasGRPOTrainer

    get_adv_est(method)  # unknown names fail here, before a model is loaded
    return SirasGRPOTrainer


class ScheduledSampler(Sampler[int]):
    """TRL's RepeatSampler layout (each question ``mini_repeat`` times in a row, each chunk repeated
    ``repeat_count`` times), with the questions chosen by the scheduler, lazily, chunk by chunk."""

    def __init__(
        self, scheduler: Scheduler, n_rows: int, per_chunk: int, mini_repeat: int, repeat_count: int
    ):
        self.scheduler, self.per_chunk = scheduler, per_chunk
        self.mini_repeat, self.repeat_count = mini_repeat, repeat_count
        self.chunks = max(1, math.ceil(n_rows / per_chunk))

    def __iter__(self) -> Iterator[int]:
        for _ in range(self.chunks):
            chunk = self.scheduler.next_indices(self.per_chunk)
            for _ in range(self.repeat_count):
                for i in chunk:
                    yield from [i] * self.mini_repeat

    def __len__(self) -> int:
        return self.chunks * self.per_chunk * self.mini_repeat * self.repeat_count


def with_schedule(base: type) -> type:
    """A subclass of ``base`` whose train sampler follows ``self.eventfold_scheduler`` when set."""

    class Scheduled(base):  # type: ignore[misc, valid-type]
        eventfold_scheduler: Scheduler | None = None

        def _get_train_sampler(self, dataset: Any = None) -> Sampler:
            if self.eventfold_scheduler is None:
                return super()._get_train_sampler(dataset)
            ds = dataset if dataset is not None else self.train_dataset
            return ScheduledSampler(
                self.eventfold_scheduler,
                len(ds),
                self.args.generation_batch_size // self.num_generations,
                self.num_generations,
                self.num_iterations * self.args.steps_per_generation,
            )

    Scheduled.__name__ = f"Scheduled{base.__name__}"
    return Scheduled


class _ScheduleStep(TrainerCallback):
    def __init__(self, scheduler: Scheduler) -> None:
        self.scheduler = scheduler

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.scheduler.step()


def make_reward(scheduler: Scheduler | None, group_size: int) -> Callable[..., list[float]]:
    def research_episode_reward(environments=None, qidx=None, log_metric=None, **kw: Any) -> list[float]:  # noqa: ANN001
        rewards = research_reward(environments=environments, log_metric=log_metric)
        if scheduler is not None and qidx is not None:
            idx, rs = list(qidx), list(rewards)
            if torch.distributed.is_available() and torch.distributed.is_initialized():
                from accelerate.utils import gather_object

                idx, rs = gather_object(idx), gather_object(rs)
            scheduler.observe(idx[::group_size], rs, group_size)
            if log_metric is not None:
                log_metric("schedule/cluster", float(scheduler.active))
        return rewards

    return research_episode_reward


def grpo_args(cfg: RLRunConfig, world_size: int | None = None) -> Any:
    """TRL's GRPOConfig. ``world_size`` (dry runs) fixes the generation batch TRL would derive from the
    number of processes, so its divisibility checks run for the target launch."""
    from trl import GRPOConfig

    g = cfg.grpo
    require_report_backend(cfg.report_to)
    from training.rl.configs import load_rollout_settings

    extra: dict[str, Any] = load_rollout_settings(cfg.launch.rollout).grpo_kwargs()
    # explicit: TRL's GRPOConfig turns checkpointing on by default (with adapters the backward then runs
    # through every layer, not only the adapted ones)
    extra["gradient_checkpointing"] = g.gradient_checkpointing
    # a rollout's turn is capped as the agent caps a served turn (one generate call per turn: HF's
    # max_new_tokens, vLLM's max_tokens); uncapped, a sampled turn that runs on after its call spent the
    # whole completion budget, which the tool results share: rollouts were clipped before any reached
    # `answer`, and every group's rewards were equal (no advantage to learn from)
    cap = "max_tokens" if extra.get("use_vllm") else "max_new_tokens"
    extra["generation_kwargs"] = {**extra.get("generation_kwargs", {}), cap: cfg.env.run.step_max_tokens}
    if world_size is not None:
        extra["generation_batch_size"] = (
            g.per_device_train_batch_size * world_size * g.gradient_accumulation_steps
        )
    return GRPOConfig(
        output_dir=str(cfg.output_dir),
        num_generations=g.num_generations,
        per_device_train_batch_size=g.per_device_train_batch_size,
        gradient_accumulation_steps=g.gradient_accumulation_steps,
        max_steps=g.max_steps,
        learning_rate=g.learning_rate,
        max_grad_norm=g.max_grad_norm,
        beta=g.beta,
        loss_type=g.loss_type,
        temperature=g.temperature,
        max_completion_length=g.max_completion_length,
        max_tool_calling_iterations=g.max_tool_calling_iterations,
        logging_steps=g.logging_steps,
        save_steps=g.save_steps,
        bf16=g.bf16,
        seed=g.seed,
        report_to=cfg.report_to,
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        **extra,
    )


def build_rl_trainer(
    cfg: RLRunConfig,
    questions: list[TrainingQuestion],
    backend: Any,
    *,
    model: Any = None,
    tokenizer: Any = None,
) -> Any:
    """The configured trainer over ``questions`` with ``backend`` as the agent's search backend."""
    from datasets import Dataset

    if model is None or tokenizer is None:
        model, tokenizer = load_model_and_tokenizer(ensure_model(cfg.model), dtype=cfg.model.dtype)
    counter = HFChatModel(tokenizer, name="policy-tokenizer")
    specs = ResearchEnv(backend, counter, cfg.env)._tool_specs()
    opener = opener_text(tokenizer) if cfg.grpo.call_opener else ""
    tokenizer = with_text_call_repair(tokenizer, [s.name for s in specs], opener)  # the calls inference would run
    scheduler = None
    if cfg.schedule.enabled:
        labels = cluster_questions(
            [q.question for q in questions], cfg.schedule.n_clusters, seed=cfg.schedule.seed
        )
        scheduler = Scheduler(labels, cfg.schedule)
    base = trainer_class(cfg.advantage.method)
    cls = with_schedule(base)
    kwargs: dict[str, Any] = {"advantage": cfg.advantage.method, "siras_config": cfg.advantage.siras}
    trainer = cls(
        model=model,
        reward_funcs=[make_reward(scheduler, cfg.grpo.num_generations)],
        args=grpo_args(cfg),
        train_dataset=Dataset.from_list(
            rl_rows(questions, cfg.env.run.context_budget)  # the env's reset adds the opening + status
        ),
        processing_class=tokenizer,
        environment_factory=lambda: ResearchEnv(backend, counter, cfg.env),
        peft_config=peft_config(cfg.lora),
        callbacks=[
            *([_ScheduleStep(scheduler)] if scheduler is not None else []),
            *([TimeBudget(cfg.grpo.max_train_minutes)] if cfg.grpo.max_train_minutes else []),
        ] or None,
        **kwargs,
    )
    trainer.eventfold_scheduler = scheduler
    log_to_run_dir(trainer, cfg)
    render_registry_schemas(trainer, specs)
    if cfg.grpo.call_opener:
        force_call_opener(trainer, tokenizer)
    from training.rl.configs import load_rollout_settings

    if load_rollout_settings(cfg.launch.rollout).mode == "llama_cpp":
        from eventfold.settings import Settings
        from training.rl.llama_rollout import attach_llama_rollouts

        n_ctx = cfg.grpo.max_completion_length + 2048  # the prompt (system, tools, question) + every turn
        attach_llama_rollouts(trainer, ensure_model(cfg.model), Settings().cache_dir, n_ctx=n_ctx)
    return trainer


def require_report_backend(report_to: str) -> None:
    """Fail before any model loads when the metrics backend's package is missing."""
    import importlib.util

    from eventfold.extras import install_hint

    if report_to == "tensorboard" and importlib.util.find_spec("tensorboard") is None:
        raise ModuleNotFoundError(
            f"report_to = \"tensorboard\" needs the tensorboard package: {install_hint('train')}", name="tensorboard"
        )


def tensorboard_dir(cfg: RLRunConfig) -> Path:
    """The run's TensorBoard log folder (one per run; a resumed run appends to it)."""
    return cfg.output_dir / "tb"


def log_to_run_dir(trainer: Any, cfg: RLRunConfig) -> None:
    """Point transformers' TensorBoard callback at ``tensorboard_dir`` (its own default is a new
    timestamped folder per start, and its only setting is a process-wide environment variable)."""
    from transformers.integrations import TensorBoardCallback

    for cb in trainer.callback_handler.callbacks:
        if isinstance(cb, TensorBoardCallback):
            cb.logging_dir = str(tensorboard_dir(cfg))


class ResumePoint(BaseModel):
    """Where a run starts: the checkpoint it resumes from (None: step 0) and the steps left to train."""

    checkpoint: str | None
    step: int
    remaining: int


def resume_point(cfg: RLRunConfig) -> ResumePoint:
    """The last checkpoint in ``output_dir`` when ``cfg.resume`` (the asynchronous pipeline always
    starts at step 0)."""
    if not cfg.resume or cfg.async_rollouts:
        return ResumePoint(checkpoint=None, step=0, remaining=cfg.grpo.max_steps)
    from training.rl.configs import load_rollout_settings

    if load_rollout_settings(cfg.launch.rollout).mode == "agent":
        # the agent-turn loop keeps its own step file and skips checkpoints written only in part
        from training.rl.agent_run import checkpoint_state, checkpoints

        done = checkpoints(Path(cfg.output_dir))
        ckpt, step = (str(done[-1]), int(checkpoint_state(done[-1])["step"])) if done else (None, 0)
    else:
        ckpt, step = last_checkpoint(cfg.output_dir), 0
        state = Path(ckpt) / "trainer_state.json" if ckpt is not None else None
        if state is not None and state.is_file():
            step = int(json.loads(state.read_text()).get("global_step", 0))
    return ResumePoint(checkpoint=ckpt, step=step, remaining=max(0, cfg.grpo.max_steps - step))


def render_registry_schemas(trainer: Any, specs: list[Any]) -> None:
    """Make TRL show the policy the registry's own JSON tool specs, in the registry's order (what the
    agent sends at inference and SFT rows carry), instead of schemas re-derived from the environment's
    methods (alphabetical, and formatted by transformers' docstring parser). Tool *execution* still goes
    through the environment methods of the same names."""
    env_tools = getattr(trainer, "_env_tools", None)
    if not isinstance(env_tools, dict):
        raise RuntimeError("this TRL version keeps no per-environment tool list (_env_tools); update render_registry_schemas")
    wanted = [s.to_openai() for s in specs]
    for name, tools in env_tools.items():
        have = sorted(getattr(t, "__name__", "") for t in tools)
        if have != sorted(s.name for s in specs):
            raise RuntimeError(f"environment {name!r} exposes tools {have}, the registry {[s.name for s in specs]}")
        env_tools[name] = wanted


def save_run_config(cfg: RLRunConfig) -> None:
    """The run's config beside its log (what ``training.curves`` labels a run with)."""
    cfg.output_dir.mkdir(parents=True, exist_ok=True)
    (cfg.output_dir / RUN_CONFIG).write_text(cfg.model_dump_json(indent=1), encoding="utf-8")


def run_rl(cfg: RLRunConfig, questions: list[TrainingQuestion], backend: Any, **model_kw: Any) -> RLResult:
    require_report_backend(cfg.report_to)
    resume = resume_point(cfg).checkpoint
    check_resume(cfg, resume)  # before the saved config is overwritten
    save_run_config(cfg)
    from training.rl.configs import load_rollout_settings

    if load_rollout_settings(cfg.launch.rollout).mode == "agent":
        from training.rl.agent_run import run_agent_rl

        return run_agent_rl(cfg, questions, backend)
    if cfg.async_rollouts:
        model, tok = model_kw.get("model"), model_kw.get("tokenizer")
        if model is None or tok is None:
            model, tok = load_model_and_tokenizer(ensure_model(cfg.model), dtype=cfg.model.dtype)
        return run_rl_async(cfg, questions, backend, model, tok, build_trainer=build_rl_trainer)
    trainer = build_rl_trainer(cfg, questions, backend, **model_kw)
    trainer.train(resume_from_checkpoint=resume)
    final = cfg.output_dir / "final"
    model = trainer.model
    if cfg.lora.enabled and cfg.lora.merge and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(final)
    trainer.processing_class.save_pretrained(final)
    log_path = cfg.output_dir / "log.jsonl"
    with log_path.open("w", encoding="utf-8") as f:
        for row in trainer.state.log_history:
            f.write(json.dumps(row) + "\n")
    sched = trainer.eventfold_scheduler
    return RLResult(
        output_dir=cfg.output_dir,
        final_dir=final,
        global_step=trainer.state.global_step,
        resumed_from=resume,
        log_path=log_path,
        schedule_history=list(sched.history) if sched else [],
    )
