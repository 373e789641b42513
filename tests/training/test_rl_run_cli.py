"""`eventfold train sft-data | sft | rl` end to end on CPU: tiny model, tiny corpus indexed by the real
EventRAG stack (rule extraction, packaged MiniLM embeddings), real agent, real TRL trainers."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.train import app

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus"
runner = CliRunner()

pytestmark = pytest.mark.slow


def _write(tmp_path: Path, name: str, body: str) -> Path:
    p = tmp_path / name
    p.write_text(body)
    return p


COMMON = """
[model]
path = "{model}"
build_tiny = true
[questions]
path = "{corpus}/questions.jsonl"
[corpus]
documents = "{corpus}"
home = "{home}"
index = "train-cli-test"
mode = "naive"
"""


def test_sft_data_then_sft_then_rl_end_to_end(tmp_path) -> None:
    common = COMMON.format(model=tmp_path / "tiny", corpus=CORPUS, home=tmp_path / "home")
    sft = _write(tmp_path, "sft.toml", f'output_dir = "sft"\ndata_dir = "data"\n{common}\n'
                 '[teacher]\nbackend = "hf"\n[teacher.run]\ncontext_budget = 3000\nmax_steps = 2\n'
                 '[optim]\nmax_steps = 1\nlearning_rate = 0.001\n')
    # 1. teacher trajectories from the real agent (the untrained tiny model as teacher: all rejected, with reasons)
    res = runner.invoke(app, ["sft-data", "--config", str(sft)])
    assert res.exit_code == 0, res.output
    manifest = json.loads((tmp_path / "data" / "manifest.json").read_text())
    assert manifest["trajectories"] == 2 and manifest["teacher"] == "hf:tiny"
    assert sum(manifest["rejection_reasons"].values()) == 2 - manifest["accepted"]
    # 2. SFT on rows of the same format (one scripted correct turn), dry run first
    row = {"prompt": [{"role": "system", "content": "s"}, {"role": "user", "content": "q"}],
           "completion": [{"role": "assistant", "content": "", "tool_calls": [
               {"type": "function", "function": {"name": "answer", "arguments": '{"answer": "Mara Quill"}'}}]}],
           "tools": "[]"}
    (tmp_path / "data" / "train.jsonl").write_text(json.dumps(row) + "\n")
    assert runner.invoke(app, ["sft", "--config", str(sft), "--dry-run"]).exit_code == 0
    res = runner.invoke(app, ["sft", "--config", str(sft)])
    assert res.exit_code == 0, res.output
    assert (tmp_path / "sft" / "final" / "config.json").is_file()
    # 3. RL from the SFT model over the indexed corpus (SIRAS trainer, adaptive schedule)
    rl_common = common.replace(f'path = "{tmp_path / "tiny"}"', f'path = "{tmp_path / "sft" / "final"}"')
    rl = _write(tmp_path, "rl.toml", f'output_dir = "rl"\n{rl_common}\n'
                '[env.run]\ncontext_budget = 3000\nmax_steps = 2\n[schedule]\nenabled = true\nn_clusters = 2\n'
                '[grpo]\nmax_steps = 1\nmax_completion_length = 24\nmax_tool_calling_iterations = 2\n')
    dry = runner.invoke(app, ["rl", "--config", str(rl), "--dry-run"])
    assert dry.exit_code == 0 and "dry run ok" in dry.output, dry.output
    res = runner.invoke(app, ["rl", "--config", str(rl)])
    assert res.exit_code == 0, res.output
    logs = [json.loads(x) for x in (tmp_path / "rl" / "log.jsonl").read_text().splitlines()]
    step = next(x for x in logs if "reward" in x)
    for key in ("episode/em", "episode/folds", "episode/peak_context_tokens", "frac_reward_zero_std", "entropy",
                "siras/degenerate_frac", "schedule/cluster"):
        assert key in step
    assert (tmp_path / "rl" / "final" / "config.json").is_file()


def test_bad_config_is_a_clear_error(tmp_path) -> None:
    bad = _write(tmp_path, "bad.toml", 'output_dir = "o"\n[model]\npath = "m"\n')
    res = runner.invoke(app, ["rl", "--config", str(bad)])
    assert res.exit_code == 2 and "questions" in res.output
