"""Dry-run validation of RL launches: broken configs are caught (the shipped ones: test_shipped_configs)."""

from __future__ import annotations

from pathlib import Path

import pytest

from training.config import ConfigError, RLRunConfig, load_config
from training.launch import check_rl_launch


def _cfg(tmp_path: Path, **over) -> RLRunConfig:
    q = tmp_path / "q.jsonl"
    q.write_text('{"question": "Who?", "answer": "Ann"}\n')
    data = {"model": {"path": str(tmp_path / "model")}, "output_dir": str(tmp_path / "o"),
            "questions": {"path": str(q)}, "launch": {"accelerate_config": "deepspeed_zero3", "num_processes": 8},
            "grpo": {"num_generations": 8, "per_device_train_batch_size": 4}}
    for k, v in over.items():
        data[k] = {**data.get(k, {}), **v}
    return RLRunConfig.model_validate(data)


def test_dry_run_catches_launch_problems(tmp_path) -> None:
    assert check_rl_launch(_cfg(tmp_path)).ok
    bad_batch = check_rl_launch(_cfg(tmp_path, grpo={"per_device_train_batch_size": 3, "num_generations": 16}))
    assert not bad_batch.ok and any("not divisible by num_generations=16" in p for p in bad_batch.problems)
    bad_acc = check_rl_launch(_cfg(tmp_path, launch={"accelerate_config": str(tmp_path / "none.yaml")}))
    assert any("accelerate_config" in p for p in bad_acc.problems)
    broken = tmp_path / "broken.yaml"
    broken.write_text("distributed_type: DEEPSPEED\nnum_processes: 2\ndeepspeed_config: {zero_stage: 7}\n")
    assert any("zero_stage" in p for p in check_rl_launch(_cfg(tmp_path, launch={"accelerate_config": str(broken)})).problems)
    fsdp = tmp_path / "fsdp.yaml"
    fsdp.write_text("distributed_type: FSDP\nnum_processes: 2\nfsdp_config: {fsdp_use_orig_params: false}\n")
    lora = check_rl_launch(_cfg(tmp_path, launch={"accelerate_config": str(fsdp), "num_processes": 2},
                                lora={"enabled": True}))
    assert any("fsdp_use_orig_params" in p for p in lora.problems)
    bad_rollout = check_rl_launch(_cfg(tmp_path, launch={"rollout": "vllm_nowhere"}))
    assert any("launch.rollout" in p for p in bad_rollout.problems)
    single = check_rl_launch(_cfg(tmp_path, launch={"accelerate_config": None, "num_processes": 1},
                                  grpo={"num_generations": 2, "per_device_train_batch_size": 2}))
    assert any("holds no model" in p for p in single.problems)  # a local run needs the model here


def test_config_loader_resolves_paths_but_not_bundled_names(tmp_path) -> None:
    f = tmp_path / "rl.toml"
    f.write_text('output_dir = "out"\n[model]\npath = "m"\n[questions]\npath = "q.jsonl"\n'
                 '[launch]\naccelerate_config = "fsdp"\nrollout = "my/rollout.yaml"\n')
    cfg = load_config(f, RLRunConfig)
    assert cfg.launch.accelerate_config == "fsdp"
    assert cfg.launch.rollout == str(tmp_path / "my" / "rollout.yaml")
    assert cfg.questions.path == tmp_path / "q.jsonl"
    f.write_text('output_dir = "out"\nasync_rollouts = true\n[model]\npath = "m"\n[questions]\npath = "q"\n'
                 '[pipeline]\nmax_lag = 2\n')
    assert load_config(f, RLRunConfig).pipeline.max_lag == 2
    f.write_text('output_dir = "out"\nasync_rollouts = true\n[model]\npath = "m"\n[questions]\npath = "q"\n'
                 '[lora]\nenabled = true\n')
    with pytest.raises(ConfigError, match="async_rollouts"):
        load_config(f, RLRunConfig)
