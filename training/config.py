"""Run configurations of `eventfold train sft` and `eventfold train rl` (pydantic, loaded from TOML).

Relative paths in a config file are resolved against the file's directory. Every section forbids
unknown keys, so a typo fails loudly with the key's name.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from eventfold.run_options import run_options_with
from training.rl.env import EnvConfig
from training.rl.pipeline.config import PipelineConfig
from training.rl.schedule import ScheduleConfig
from training.rl.siras.config import SirasConfig
from training.sft.data import AcceptConfig


class ConfigError(ValueError):
    """A config file that cannot be read or validated."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ModelSection(_Strict):
    """The student: a local HF directory, a ``.gguf`` file, or a packaged GGUF by name (dequantized once
    and cached as an HF directory, ``training.common.loading``)."""

    path: Path | None = Field(None, description="local model directory (save_pretrained layout) or a .gguf file")
    packaged: str | None = Field(None, description="packaged GGUF model name (`eventfold model list`), e.g. qwen2.5-coder-0.5b")
    build_tiny: bool = Field(False, description="build the offline tiny test model at `path` if it is missing")
    dtype: Literal["auto", "float32", "bfloat16", "float16"] = "auto"

    @model_validator(mode="after")
    def _one_source(self) -> ModelSection:
        if (self.path is None) == (self.packaged is None):
            raise ValueError("[model] needs exactly one of `path` (directory or .gguf) and `packaged` (model name)")
        if self.build_tiny and self.path is None:
            raise ValueError("[model] build_tiny needs `path` (where to build the tiny model)")
        return self

    @property
    def label(self) -> str:
        return self.packaged or str(self.path)

    def is_available(self) -> bool:
        """Whether loading can start without building anything first (for dry runs)."""
        if self.packaged is not None:
            from eventfold.models import get_model, is_installed
            from eventfold.settings import Settings

            return is_installed(Settings().models_dir, get_model(self.packaged))
        assert self.path is not None
        if self.path.suffix == ".gguf":
            return self.path.is_file()
        return (self.path / "config.json").is_file()


class LoraSection(_Strict):
    enabled: bool = False
    r: int = Field(8, ge=1)
    alpha: int = Field(16, ge=1)
    dropout: float = Field(0.05, ge=0.0, lt=1.0)
    target_modules: list[str] = Field(default_factory=lambda: ["q_proj", "k_proj", "v_proj", "o_proj"])
    layers: list[int] | None = Field(
        None, description="only these decoder layers get adapters (the backward pass stops above them: cheaper)"
    )
    merge: bool = Field(True, description="merge the adapter into the saved final model")
    modules_to_save: list[str] | None = Field(
        None, description="modules trained in full beside the adapters (SFT: ['lm_head'], as TRL does for new tokens)"
    )


class OptimSection(_Strict):
    learning_rate: float = Field(1e-5, gt=0)
    max_steps: int = Field(-1, description="-1: run num_train_epochs")
    num_train_epochs: float = Field(1.0, gt=0)
    per_device_train_batch_size: int = Field(1, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    warmup_steps: int = Field(0, ge=0)
    weight_decay: float = Field(0.0, ge=0)
    max_grad_norm: float = Field(1.0, gt=0)
    bf16: bool = False
    gradient_checkpointing: bool = False
    logging_steps: int = Field(1, ge=1)
    save_steps: int = Field(50, ge=1)
    save_total_limit: int = Field(2, ge=1)
    seed: int = 0
    max_train_minutes: float | None = Field(None, gt=0, description="stop after the step that passes this wall time")


class QuestionsSection(_Strict):
    """Training questions: a JSONL of {id?, question, answer | answers, answer_aliases? | aliases?}, or a dataset
    folder or official question file of HotpotQA / MuSiQue / 2Wiki / MultiHopRAG (as in data/multihop);
    ``offset`` and ``limit`` pick them in file order."""

    path: Path
    limit: int | None = Field(None, ge=1)
    offset: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _after_the_benchmarks(self) -> QuestionsSection:
        """The shipped HotpotQA and MuSiQue sets' first questions are the benchmarks': never trained on."""
        from eval.bundled_data import BENCHMARK_QUESTIONS

        parts = [x.lower() for x in self.path.expanduser().resolve().parts]
        sets = [c for a, b, c in zip(parts, parts[1:], parts[2:], strict=False) if (a, b) == ("data", "multihop")]
        if sets and sets[0].startswith(("hotpotqa", "musique")) and self.offset < BENCHMARK_QUESTIONS:
            raise ValueError(
                f"[questions] {self.path}: offset {self.offset} takes benchmark questions; the first "
                f"{BENCHMARK_QUESTIONS} of data/multihop's HotpotQA and MuSiQue sets are the benchmarks' "
                f"(set offset >= {BENCHMARK_QUESTIONS})"
            )
        return self


class CorpusSection(_Strict):
    """The indexed corpus the agent searches (an EventRAG index opened with the project settings)."""

    settings_toml: Path | None = Field(None, description="eventfold settings TOML (index name, stores, models)")
    index: str | None = Field(None, description="override Settings.index")
    documents: Path | None = Field(None, description="documents to index first when the index is empty")
    mode: Literal["naive", "graph", "event", "agentic"] | None = None
    home: Path | None = Field(None, description="override Settings.home (where indexes live)")
    distractors: int = Field(0, ge=0, description="dataset folders: extra passages indexed besides the questions' own")


# the teacher's own run defaults (TOML ``[teacher.run]``); other keys as in Settings.run
TeacherRunOptions = run_options_with(context_budget=1536, max_steps=8)


class LongTasksSection(_Strict):
    """Long tasks built from the training questions (``eval.longhorizon.tasks.build_tasks``): ``count``
    requests of ``k`` numbered items each, plus ``cross_refs`` cross-reference items per request."""

    count: int = Field(0, ge=0, description="long tasks added after the single questions (0: none)")
    k: int = Field(4, ge=2, le=16)
    cross_refs: int = Field(1, ge=0, le=4)
    seed: int = 0
    max_steps: int = Field(40, ge=1, le=500, description="the long tasks' step cap (items, folds and unfolds)")


class TeacherSection(_Strict):
    """Teacher for SFT data: the project LLM (``Settings.llm``: local llama.cpp GGUF or an
    OpenAI-compatible server), the HF model at ``model`` (``hf``), only the privileged oracle
    (``oracle``), or the scripted workflow policy with its memory decisions (``workflow``: its reader is
    ``Settings.llm``); ``oracle_fill`` mixes the oracle in where the LLM yields too few kept trajectories
    (``training.sft.teachers``)."""

    backend: Literal["settings", "hf", "oracle", "workflow"] = Field(
        "settings", description="settings: Settings.llm; hf: model.path; oracle: scripted; workflow: the workflow policy")
    long_tasks: LongTasksSection = Field(default_factory=LongTasksSection,
                                         description="workflow teacher: long tasks from a dataset's questions")
    run: TeacherRunOptions = Field(default_factory=dict, validate_default=True)  # type: ignore[valid-type]
    workers: int = Field(1, ge=1)
    llm_questions: int | None = Field(None, ge=0, description="run the LLM teacher on only the first N questions")
    oracle_fill: Literal["none", "rejected", "all"] = Field(
        "none", description="oracle trajectories for the questions the LLM got no kept trajectory for, or for all")
    oracle_slips: float = Field(0.0, ge=0.0, le=1.0, description="share of questions on which the oracle re-runs "
                                "its first query once (an untrained turn) so the data holds the states after it")

    @model_validator(mode="after")
    def _workflow_only(self) -> TeacherSection:
        if self.long_tasks.count and self.backend != "workflow":
            raise ValueError("[teacher.long_tasks] is built for the workflow teacher: set backend = \"workflow\"")
        if self.backend == "workflow" and self.oracle_fill != "none":
            raise ValueError("the workflow teacher runs alone: set oracle_fill = \"none\"")
        return self


class SFTRunConfig(_Strict):
    kind: Literal["sft"] = "sft"
    model: ModelSection
    output_dir: Path
    data_dir: Path = Field(description="dataset folder: train.jsonl (+ manifest.json)")
    extra_data_dirs: list[Path] = Field(
        default_factory=list, description="more dataset folders (each built by its own sft-data config: another "
        "question set or teacher) whose train.jsonl rows are trained on beside data_dir's")
    max_length: int = Field(4096, ge=64)
    resume: bool = True
    lora: LoraSection = Field(default_factory=LoraSection)
    optim: OptimSection = Field(default_factory=OptimSection)
    # optional: build the dataset first (eventfold train sft-data)
    questions: QuestionsSection | None = None
    corpus: CorpusSection | None = None
    teacher: TeacherSection = Field(default_factory=TeacherSection)
    accept: AcceptConfig = Field(default_factory=AcceptConfig)


class GRPOSection(_Strict):
    num_generations: int = Field(2, ge=2)
    per_device_train_batch_size: int = Field(2, ge=1)
    gradient_accumulation_steps: int = Field(1, ge=1)
    max_steps: int = Field(10, ge=1)
    learning_rate: float = Field(1e-6, gt=0)
    beta: float = Field(0.0, ge=0)
    loss_type: str = "dapo"
    temperature: float = Field(1.0, gt=0)
    max_completion_length: int = Field(512, ge=8)
    max_tool_calling_iterations: int = Field(8, ge=1)
    call_opener: bool = Field(
        True, description="each turn starts from the template's tool-call opener, as the agent serves it (training.rl.opener)"
    )
    logging_steps: int = Field(1, ge=1)
    save_steps: int = Field(50, ge=1)
    bf16: bool = False
    gradient_checkpointing: bool = False
    max_grad_norm: float = Field(1.0, gt=0, description="the gradient's norm is clipped to this before each step")
    prompt_grad: bool = Field(
        True, description="agent-turn RL: gradients through the prompt's top-layer keys and values (exact); "
        "false trains on the call's positions only, a shorter backward (training.rl.agent_forward)"
    )
    resample_flat: int = Field(
        0, ge=0, description="agent-turn RL: up to this many more questions drawn per step in place of sibling groups "
        "whose rollouts all score the same answer F1 (DAPO's dynamic sampling); 0 trains on the questions drawn"
    )
    seed: int = 0
    max_train_minutes: float | None = Field(None, gt=0, description="stop after the step that passes this wall time")


class AdvantageSection(_Strict):
    """How advantages are computed: a registered estimator (training.rl.advantages) by name, and the
    typed SIRAS options (``[advantage.siras]``, every field of training.rl.siras.SirasConfig)."""

    method: Literal["grpo", "siras", "siras_no_dtw", "siras_no_residual", "siras_no_softclip"] = "siras"
    siras: SirasConfig = Field(default_factory=SirasConfig)


class LaunchSection(_Strict):
    """Multi-GPU launch and rollout generation, from the bundled configs of ``training.rl.configs``
    (a name such as ``deepspeed_zero3`` / ``vllm_colocate``, or a path to a YAML file of the same kind)."""

    accelerate_config: str | None = Field(None, description="single_gpu, multi_gpu_ddp, deepspeed_zero2/3, fsdp, or a path")
    rollout: str = Field("hf_generate", description="hf_generate, vllm_colocate, vllm_server, or a path")
    num_processes: int = Field(1, ge=1)


class RLRunConfig(_Strict):
    kind: Literal["rl"] = "rl"
    model: ModelSection
    output_dir: Path
    resume: bool = True
    report_to: Literal["none", "tensorboard"] = Field(
        "none", description="tensorboard: TRL's per-step metrics also go to TensorBoard event files in output_dir/tb"
    )
    questions: QuestionsSection
    corpus: CorpusSection = Field(default_factory=CorpusSection)
    env: EnvConfig = Field(default_factory=EnvConfig)
    schedule: ScheduleConfig = Field(default_factory=lambda: ScheduleConfig(enabled=False))
    grpo: GRPOSection = Field(default_factory=GRPOSection)
    advantage: AdvantageSection = Field(default_factory=AdvantageSection)
    lora: LoraSection = Field(default_factory=LoraSection)
    launch: LaunchSection = Field(default_factory=LaunchSection)
    async_rollouts: bool = Field(
        False, description="train through the async pipeline (training.rl.pipeline): rollout workers running "
        "the multi-turn tool loop ‖ learner, bounded staleness; settings in [pipeline]",
    )
    pipeline: PipelineConfig = Field(default_factory=PipelineConfig)

    @model_validator(mode="after")
    def _check(self) -> RLRunConfig:
        if self.async_rollouts and self.lora.enabled:
            raise ValueError("async_rollouts trains all parameters of the policy: set lora.enabled = false")
        if self.async_rollouts and self.launch.num_processes > 1:
            raise ValueError("async_rollouts runs in one process (rollout threads + learner): num_processes = 1")
        if self.async_rollouts and self.report_to != "none":
            raise ValueError("async_rollouts writes log.jsonl only: set report_to = \"none\"")
        return self


C = TypeVar("C", SFTRunConfig, RLRunConfig)


# settings that name a file or folder (taken from the config file's directory; compared by content on resume)
PATH_KEYS = {"path", "output_dir", "data_dir", "settings_toml", "documents", "home"}
_PATH_LIST_KEYS = {"extra_data_dirs"}
_NAME_OR_PATH_KEYS = {"accelerate_config", "rollout"}  # a bundled config name, or a path


def _resolve(data: Any, base: Path, key: str = "") -> Any:
    if isinstance(data, dict):
        return {k: _resolve(v, base, k) for k, v in data.items()}
    if isinstance(data, list) and key in _PATH_LIST_KEYS:
        return [_resolve(v, base, "path") for v in data]
    looks_like_path = isinstance(data, str) and ("/" in data or data.endswith((".yaml", ".yml")))
    if isinstance(data, str) and (key in PATH_KEYS or (key in _NAME_OR_PATH_KEYS and looks_like_path)):
        p = Path(data).expanduser()
        return str(p if p.is_absolute() else (base / p))
    return data


def load_config(path: str | Path, cls: type[C]) -> C:
    """Read a TOML run config; relative paths are taken from the file's directory."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError(f"config file {str(p)!r} not found")
    try:
        raw = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from exc
    try:
        return cls.model_validate(_resolve(raw, p.resolve().parent))
    except ValidationError as exc:
        raise ConfigError(f"{p}: invalid {cls.__name__}:\n{exc}") from exc
