"""Every run config in training/configs/ loads, reads its questions from the repository's data and
passes its dry run on a fresh clone; every RL config starts from a model a shipped SFT config makes;
training questions stay clear of the benchmarks' development questions."""

from __future__ import annotations

from pathlib import Path

import pytest

from eval.bundled_data import BENCHMARK_QUESTIONS, DATA_DIR
from training.config import RLRunConfig, SFTRunConfig, load_config
from training.launch import check_rl_launch, check_sft

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "training" / "configs"
SHIPPED = sorted(p.name for p in CONFIGS.glob("*.toml"))


def _load(name: str) -> SFTRunConfig | RLRunConfig:
    return load_config(CONFIGS / name, SFTRunConfig if name.startswith("sft_") else RLRunConfig)


def _sft_outputs() -> dict[Path, str]:
    """The final model folder each shipped SFT config writes, and the config's name."""
    return {_load(n).output_dir / "final": n for n in SHIPPED if n.startswith("sft_")}


def test_every_config_is_an_sft_or_rl_config_and_the_gpu_ones_are_there() -> None:
    assert all(n.startswith(("sft_", "rl_")) for n in SHIPPED), SHIPPED
    assert {"sft_tiny.toml", "sft_qwen05b.toml", "sft_qwen3_8b.toml", "sft_qwen3_1.7b.toml", "rl_tiny.toml",
            "rl_qwen05b.toml", "rl_8gpu_zero3_vllm.toml", "rl_4gpu_fsdp_lora.toml"} <= set(SHIPPED)


@pytest.mark.parametrize("name", SHIPPED)
def test_every_config_passes_its_dry_run(name: str, tmp_path: Path) -> None:
    """What a fresh clone cannot hold is the weights (a model a shipped SFT config makes, a packaged
    model before `eventfold model pull`, a base model to download): the one problem allowed. The output
    goes to an empty folder: checkpoints the machine's user trained before are theirs, not the config's."""
    cfg = _load(name).model_copy(update={"output_dir": tmp_path / "out"})
    path = CONFIGS / name
    check = check_sft(cfg) if isinstance(cfg, SFTRunConfig) else check_rl_launch(cfg, path)
    if check.problems and not cfg.model.build_tiny:
        assert len(check.problems) == 1 and "holds no model" in check.problems[0], check.problems
    else:
        assert check.ok, check.problems
    if cfg.questions is not None:
        assert any(n.endswith("training questions") for n in check.notes), check.notes
    if isinstance(cfg, RLRunConfig) and cfg.launch.accelerate_config:
        assert check.command[:2] == ["accelerate", "launch"] and check.world_size > 1
        assert check.command[check.command.index("--num_processes") + 1] == str(check.world_size)
        assert check.command[-4:] == ["training.launch", "rl", "--config", str(path)]


@pytest.mark.parametrize("name", [n for n in SHIPPED if n.startswith("rl_")])
def test_every_rl_config_starts_from_a_model_it_can_get(name: str) -> None:
    cfg = _load(name)
    assert cfg.model.path is not None
    if cfg.model.path.name == "final":  # an SFT run's output: a shipped SFT config must make it
        assert cfg.model.path in _sft_outputs(), f"{name} starts from {cfg.model.path}, which no SFT config makes"
    else:
        assert cfg.model.build_tiny


@pytest.mark.parametrize("name", SHIPPED)
def test_questions_come_from_the_repository(name: str) -> None:
    cfg = _load(name)
    assert cfg.questions is not None
    assert cfg.questions.path.resolve().is_relative_to(ROOT), cfg.questions.path
    if cfg.questions.path.resolve().is_relative_to(DATA_DIR / "multihop"):  # the benchmarks' sets; data/stories trains only
        assert cfg.questions.offset >= BENCHMARK_QUESTIONS, "training on the benchmarks' development questions"


def _taken(cfg: SFTRunConfig | RLRunConfig) -> tuple[Path, range]:
    q = cfg.questions
    assert q is not None and q.limit is not None
    return q.path.resolve(), range(q.offset, q.offset + q.limit)


def test_rl_questions_follow_the_sft_run_they_start_from() -> None:
    """RL on questions the SFT student was taught the answers of would reward recall, not research."""
    outputs = _sft_outputs()
    pairs = [(outputs[cfg.model.path], n) for n in SHIPPED if n.startswith("rl_")
             for cfg in [_load(n)] if cfg.model.path in outputs]
    assert {rl for _, rl in pairs} >= {"rl_qwen05b.toml", "rl_8gpu_zero3_vllm.toml", "rl_4gpu_fsdp_lora.toml"}
    for sft_name, rl_name in pairs:
        sft_path, sft_range = _taken(_load(sft_name))
        rl_path, rl_range = _taken(_load(rl_name))
        if sft_path == rl_path:
            assert not set(sft_range) & set(rl_range), f"{sft_name} and {rl_name} share questions"


def _sft(tmp_path: Path, questions: Path, bf16: bool) -> SFTRunConfig:
    return SFTRunConfig.model_validate({
        "model": {"path": str(tmp_path / "no-model")}, "output_dir": str(tmp_path / "out"),
        "data_dir": str(tmp_path / "data"), "optim": {"bf16": bf16}, "questions": {"path": str(questions)},
    })


def test_sft_dry_run_checks_questions_and_knows_where_the_weights_live(tmp_path, monkeypatch) -> None:
    import torch

    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    questions = tmp_path / "q.jsonl"
    questions.write_text('{"question": "Who?", "answer": "Ann"}\n')
    cpu = check_sft(_sft(tmp_path, questions, bf16=False))  # runs here: the model must be here
    assert cpu.problems == [p for p in cpu.problems if "holds no model" in p] and len(cpu.problems) == 1
    assert "1 training questions" in cpu.notes
    gpu = check_sft(_sft(tmp_path, questions, bf16=True))  # a GPU run checked off its machine
    assert gpu.ok and any("must exist on the GPU machine" in n for n in gpu.notes)
    missing = check_sft(_sft(tmp_path, tmp_path / "none.jsonl", bf16=True))
    assert not missing.ok and any(p.startswith("questions:") and "does not exist" in p for p in missing.problems)
