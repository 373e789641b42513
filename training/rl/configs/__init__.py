"""Launch settings for RL training: accelerate configs (single GPU, DDP, DeepSpeed ZeRO-2/3, FSDP) and
rollout (generation) settings — vLLM colocated, vLLM server, or plain ``model.generate``.

``accelerate_config_path("deepspeed_zero3")`` gives the YAML for ``accelerate launch --config_file``;
``load_rollout_settings("vllm_colocate").grpo_kwargs()`` gives the ``GRPOConfig`` keyword arguments.
Both also accept a path to the user's own YAML file.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, model_validator

ACCELERATE_CONFIGS = ("single_gpu", "multi_gpu_ddp", "deepspeed_zero2", "deepspeed_zero3", "fsdp")
ROLLOUT_CONFIGS = ("hf_generate", "llama_cpp", "agent", "vllm_colocate", "vllm_server")
_DISTRIBUTED_TYPES = {"NO", "MULTI_GPU", "DEEPSPEED", "FSDP"}


class ConfigNotFoundError(FileNotFoundError):
    """Neither a bundled config name nor an existing YAML file."""


def _resolve(name_or_path: str | Path, names: tuple[str, ...]) -> Path:
    if str(name_or_path) in names:
        return Path(str(resources.files(__name__).joinpath(f"{name_or_path}.yaml")))
    p = Path(name_or_path).expanduser()
    if p.is_file():
        return p
    raise ConfigNotFoundError(f"{name_or_path!r} is neither one of {names} nor a YAML file")


def accelerate_config_path(name_or_path: str | Path) -> Path:
    """Path of a bundled accelerate config (see ACCELERATE_CONFIGS) or of the given YAML file."""
    return _resolve(name_or_path, ACCELERATE_CONFIGS)


def load_accelerate_config(name_or_path: str | Path) -> dict[str, Any]:
    """Parse and sanity-check an accelerate YAML (distributed type, process count, ZeRO stage)."""
    path = accelerate_config_path(name_or_path)
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict):
        raise ValueError(f"{path}: not a YAML mapping")
    dt = data.get("distributed_type")
    if dt not in _DISTRIBUTED_TYPES:
        raise ValueError(f"{path}: distributed_type must be one of {sorted(_DISTRIBUTED_TYPES)} (got {dt!r})")
    if not isinstance(data.get("num_processes"), int) or data["num_processes"] < 1:
        raise ValueError(f"{path}: num_processes must be a positive integer")
    if dt == "DEEPSPEED" and data.get("deepspeed_config", {}).get("zero_stage") not in (0, 1, 2, 3):
        raise ValueError(f"{path}: deepspeed_config.zero_stage must be 0-3")
    return data


class RolloutSettings(BaseModel):
    """How rollouts are generated; ``grpo_kwargs()`` maps onto TRL ``GRPOConfig`` fields."""

    model_config = ConfigDict(extra="forbid")

    # none: transformers' generate; llama_cpp: the base GGUF + the trainer's LoRA adapter exported each
    # step (training.rl.llama_rollout, CPU); agent: every rollout a run of the agent itself, each turn
    # trained on its own prompt, generating as llama_cpp does (training.rl.agent_run); colocate / server: vLLM
    mode: Literal["none", "llama_cpp", "agent", "colocate", "server"] = "none"
    gpu_memory_utilization: float = Field(
        0.3, gt=0.0, le=1.0, description="colocate: vLLM's share of the GPU"
    )
    tensor_parallel_size: int = Field(1, ge=1)
    enable_sleep_mode: bool = Field(
        False, description="colocate: offload vLLM weights during the optimizer step"
    )
    max_model_length: int | None = Field(None, ge=1)
    server_base_url: str | None = None
    server_host: str = "127.0.0.1"
    server_port: int = Field(8000, ge=1, le=65535)
    server_timeout_s: float = Field(240.0, gt=0.0)
    importance_sampling_correction: bool = True

    @model_validator(mode="after")
    def _check(self) -> RolloutSettings:
        if self.server_base_url is not None and not self.server_base_url.startswith(("http://", "https://")):
            raise ValueError(
                f"server_base_url must start with http:// or https:// (got {self.server_base_url!r})"
            )
        return self

    def grpo_kwargs(self) -> dict[str, Any]:
        if self.mode in ("none", "llama_cpp", "agent"):
            return {"use_vllm": False}
        kw: dict[str, Any] = {
            "use_vllm": True,
            "vllm_mode": self.mode,
            "vllm_importance_sampling_correction": self.importance_sampling_correction,
        }
        if self.mode == "colocate":
            kw |= {
                "vllm_gpu_memory_utilization": self.gpu_memory_utilization,
                "vllm_tensor_parallel_size": self.tensor_parallel_size,
                "vllm_enable_sleep_mode": self.enable_sleep_mode,
                "vllm_max_model_length": self.max_model_length,
            }
        else:
            kw |= {
                "vllm_server_base_url": self.server_base_url,
                "vllm_server_host": self.server_host,
                "vllm_server_port": self.server_port,
                "vllm_server_timeout": self.server_timeout_s,
            }
        return kw


def load_rollout_settings(name_or_path: str | Path) -> RolloutSettings:
    """A bundled rollout config (see ROLLOUT_CONFIGS) or a YAML file, validated."""
    path = _resolve(name_or_path, ROLLOUT_CONFIGS)
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    return RolloutSettings.model_validate(data)
