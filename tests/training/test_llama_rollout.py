"""Fast checks of the llama.cpp rollout wiring (the real round trip is in test_lora_gguf_slow.py)."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from training.rl.configs import load_rollout_settings
from training.rl.llama_rollout import LoraRolloutEngine, attach_llama_rollouts


def test_llama_cpp_rollouts_need_a_pure_lora_adapter(tmp_path) -> None:
    full = SimpleNamespace(model=SimpleNamespace(), processing_class=None)
    with pytest.raises(ValueError, match=r"\[lora\] enabled"):
        attach_llama_rollouts(full, tmp_path, tmp_path, n_ctx=512)
    head = SimpleNamespace(model=SimpleNamespace(peft_config={"default": SimpleNamespace(modules_to_save={"lm_head"})}))
    with pytest.raises(ValueError, match="modules_to_save"):
        attach_llama_rollouts(head, tmp_path, tmp_path, n_ctx=512)


def test_engine_refuses_to_generate_before_the_first_adapter(tmp_path) -> None:
    engine = LoraRolloutEngine(tmp_path / "base.gguf", tmp_path, tmp_path, tmp_path / "adapters")
    with pytest.raises(RuntimeError, match="sync"):
        engine.generate([1, 2, 3], 4, 1.0)


def test_the_llama_cpp_rollout_config_generates_in_process() -> None:
    settings = load_rollout_settings("llama_cpp")
    assert settings.mode == "llama_cpp" and settings.grpo_kwargs() == {"use_vllm": False}
