"""Bundled accelerate and rollout configs parse, validate, and map onto TRL/accelerate fields."""

from __future__ import annotations

import dataclasses

import pytest

from training.rl.configs import (
    ACCELERATE_CONFIGS,
    ROLLOUT_CONFIGS,
    ConfigNotFoundError,
    RolloutSettings,
    accelerate_config_path,
    load_accelerate_config,
    load_rollout_settings,
)


@pytest.mark.parametrize("name", ACCELERATE_CONFIGS)
def test_accelerate_configs_parse_with_accelerate(name: str) -> None:
    from accelerate.commands.config.config_args import ClusterConfig

    data = load_accelerate_config(name)
    cfg = ClusterConfig.from_yaml_file(accelerate_config_path(name))  # accelerate's own loader
    assert str(cfg.distributed_type).endswith(data["distributed_type"])
    if name.startswith("deepspeed"):
        assert cfg.deepspeed_config["zero_stage"] == int(name[-1])
    if name == "fsdp":
        assert cfg.fsdp_config["fsdp_version"] == 2


@pytest.mark.parametrize("name", ROLLOUT_CONFIGS)
def test_rollout_configs_map_onto_grpo_config(name: str) -> None:
    from trl import GRPOConfig

    kw = load_rollout_settings(name).grpo_kwargs()
    fields = {f.name for f in dataclasses.fields(GRPOConfig)}
    assert set(kw) <= fields
    assert kw["use_vllm"] == name.startswith("vllm")  # hf_generate and llama_cpp generate in-process
    if name == "vllm_server":
        assert kw["vllm_mode"] == "server" and kw["vllm_server_port"] == 8000


def test_bad_configs_are_clear_errors(tmp_path) -> None:
    with pytest.raises(ConfigNotFoundError):
        load_accelerate_config("nope")
    bad = tmp_path / "bad.yaml"
    bad.write_text("distributed_type: WEIRD\nnum_processes: 2\n")
    with pytest.raises(ValueError, match="distributed_type"):
        load_accelerate_config(bad)
    with pytest.raises(ValueError):
        RolloutSettings(mode="server", server_base_url="localhost:8000")
    own = tmp_path / "own.yaml"
    own.write_text("mode: colocate\ngpu_memory_utilization: 0.5\n")
    assert load_rollout_settings(own).grpo_kwargs()["vllm_gpu_memory_utilization"] == 0.5


@pytest.mark.parametrize("name", ["rl_qwen05b.toml", "rl_tiny.toml", "rl_8gpu_zero3_vllm.toml"])
def test_a_rollout_turn_is_capped_as_a_served_turn(name: str) -> None:
    """Each generate call of a rollout is one turn: capped at the agent's step_max_tokens (HF generate's
    max_new_tokens, vLLM's max_tokens), so a turn that runs on after its call cannot spend the budget
    the later turns and the tool results need; the real student's budget holds every turn of an episode."""
    from pathlib import Path

    from training.config import RLRunConfig, load_config
    from training.rl.run import grpo_args

    cfg = load_config(Path(__file__).parents[2] / "training" / "configs" / name, RLRunConfig)
    args = grpo_args(cfg, world_size=1)
    key = "max_tokens" if args.use_vllm else "max_new_tokens"
    assert args.generation_kwargs[key] == cfg.env.run.step_max_tokens
    clipped = cfg.model_copy(update={"grpo": cfg.grpo.model_copy(update={"max_grad_norm": 0.3})})
    assert grpo_args(clipped, world_size=1).max_grad_norm == 0.3  # [grpo] max_grad_norm reaches TRL
    if name == "rl_qwen05b.toml":
        turns = cfg.grpo.max_tool_calling_iterations + 1
        assert args.max_completion_length >= turns * cfg.env.run.step_max_tokens + 4 * 250
