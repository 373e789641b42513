"""SFT training on the tiny model: one step changes parameters (full and LoRA), masks, checkpoints, resume."""

from __future__ import annotations

import json

import pytest
import torch

from eventfold.run_options import TRAINED_RUN_FILE
from training.common.loading import load_model_and_tokenizer
from training.common.tiny import qwen3_chat_template
from training.config import ConfigError, QuestionsSection, SFTRunConfig, TeacherSection, load_config
from training.sft.train import build_trainer, load_rows, run_sft, training_rows

TOOLS = json.dumps(
    [
        {
            "type": "function",
            "function": {
                "name": "search",
                "description": "Search the corpus.",
                "parameters": {
                    "type": "object",
                    "properties": {"query": {"type": "string"}},
                    "required": ["query"],
                },
            },
        }
    ]
)


def _rows() -> list[dict]:
    call = {
        "type": "function",
        "function": {"name": "search", "arguments": json.dumps({"query": "storm date"})},
    }
    prompt = [
        {"role": "system", "content": "You are a research agent."},
        {"role": "user", "content": "When was the storm?"},
    ]
    second_prompt = prompt + [
        {"role": "assistant", "content": "[step 1]", "tool_calls": [call]},
        {"role": "tool", "name": "search", "content": "[1] [c:01-storm#0] The storm was on 10 January 2020."},
    ]
    answer = {
        "type": "function",
        "function": {"name": "answer", "arguments": json.dumps({"answer": "10 January 2020"})},
    }
    return [
        {
            "prompt": prompt,
            "completion": [{"role": "assistant", "content": "", "tool_calls": [call]}],
            "tools": TOOLS,
        },
        {
            "prompt": second_prompt,
            "completion": [{"role": "assistant", "content": "", "tool_calls": [answer]}],
            "tools": TOOLS,
        },
    ]


@pytest.fixture
def cfg(tmp_path, tiny_model_dir) -> SFTRunConfig:
    data = tmp_path / "data"
    data.mkdir()
    (data / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in _rows()))
    return SFTRunConfig.model_validate(
        {
            "model": {"path": str(tiny_model_dir)},
            "output_dir": str(tmp_path / "out"),
            "data_dir": str(data),
            "max_length": 2048,
            "optim": {
                "learning_rate": 1e-2,
                "max_steps": 1,
                "per_device_train_batch_size": 2,
                "save_steps": 1,
            },
        }
    )


def test_tokenized_rows_train_only_the_assistant_call(cfg) -> None:
    trainer = build_trainer(cfg, load_rows(cfg.data_dir))
    tok = trainer.processing_class
    for ex in trainer.train_dataset:
        keep = [t for t, lab in zip(ex["input_ids"], ex["labels"], strict=True) if lab != -100]
        text = tok.decode(keep)
        assert "<tool_call>" in text and "<tool_response>" not in text and "research agent" not in text
    assert tok.decode(keep).count("<tool_call>") == 1 and '"answer"' in tok.decode(keep)


def test_one_sft_step_changes_parameters_and_saves(cfg, tiny_model_dir) -> None:
    before, _ = load_model_and_tokenizer(tiny_model_dir)
    res = run_sft(cfg)
    assert res.global_step == 1 and res.rows == 2 and res.train_loss is not None
    after, tok = load_model_and_tokenizer(res.final_dir)
    diff = sum(
        (a - b).abs().sum().item() for a, b in zip(after.parameters(), before.parameters(), strict=True)
    )
    assert diff > 0
    assert tok.chat_template == qwen3_chat_template()  # inference template kept, not the training one
    # resume: a longer run continues from the saved checkpoint
    longer = cfg.model_copy(update={"optim": cfg.optim.model_copy(update={"max_steps": 2})})
    res2 = run_sft(longer)
    assert res2.resumed_from is not None and res2.resumed_from.endswith("checkpoint-1")
    assert res2.global_step == 2


def test_lora_step_trains_adapter_and_merges(cfg, tiny_model_dir) -> None:
    lora = cfg.model_copy(update={"lora": cfg.lora.model_copy(update={"enabled": True, "r": 4, "alpha": 8})})
    trainer = build_trainer(lora, load_rows(lora.data_dir))
    trainable = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora" in n for n in trainable)
    trainer.train()
    changed = [
        n for n, p in trainer.model.named_parameters() if n in trainable and not torch.equal(p, trainable[n])
    ]
    assert changed
    from training.sft.train import save_final

    final = save_final(trainer, lora)
    merged, _ = load_model_and_tokenizer(final)
    assert not any("lora" in n for n, _ in merged.named_parameters())


def test_config_file_errors(tmp_path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        load_config(tmp_path / "none.toml", SFTRunConfig)
    bad = tmp_path / "bad.toml"
    bad.write_text('output_dir = "o"\ndata_dir = "d"\n[model]\npath = "m"\ntypo = 1\n')
    with pytest.raises(ConfigError, match="typo"):
        load_config(bad, SFTRunConfig)
    ok = tmp_path / "ok.toml"
    ok.write_text('output_dir = "o"\ndata_dir = "d"\n[model]\npath = "m"\n')
    c = load_config(ok, SFTRunConfig)
    assert c.output_dir == tmp_path / "o" and c.model.path == tmp_path / "m"


def test_extra_data_dirs_are_read_from_the_config_folder_and_join_the_rows(tmp_path) -> None:
    for name, rows in (("main", _rows()[:1]), ("more", _rows()[1:])):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    path = tmp_path / "sft.toml"
    path.write_text('output_dir = "o"\ndata_dir = "main"\nextra_data_dirs = ["more"]\n[model]\npath = "m"\n')
    cfg = load_config(path, SFTRunConfig)
    assert cfg.extra_data_dirs == [tmp_path / "more"]
    rows = training_rows(cfg)
    assert [r["completion"][0]["tool_calls"][0]["function"]["name"] for r in rows] == ["search", "answer"]
    (tmp_path / "more" / "train.jsonl").unlink()
    with pytest.raises(FileNotFoundError, match="more"):
        training_rows(cfg)


def test_time_budget_stops_after_the_step_that_spends_it_and_saves(cfg) -> None:
    timed = cfg.model_copy(update={"resume": False, "optim": cfg.optim.model_copy(
        update={"max_steps": 3, "max_train_minutes": 1e-6, "per_device_train_batch_size": 1})})
    res = run_sft(timed)
    assert res.global_step == 1 and (res.final_dir / "config.json").is_file()
    assert res.seconds_per_step and res.tokens_per_second and res.dropped_too_long == 0
    assert (timed.output_dir / "checkpoint-1").is_dir()  # the stopped step is saved: resume goes on from it
    assert not (res.final_dir / TRAINED_RUN_FILE).exists()  # rows from elsewhere: no teacher's options


def test_the_student_is_saved_with_the_run_options_of_its_rows(cfg) -> None:
    """Rows recorded by the config's own teacher: the final folder says how they ran, so `ask --model`
    serves the student with the same budget and result sizes and without a suggestion line."""
    from pathlib import Path

    questions = Path(__file__).resolve().parents[1] / "fixtures" / "tiny_corpus" / "questions.jsonl"
    taught = cfg.model_copy(update={"questions": QuestionsSection(path=questions), "teacher": TeacherSection(
        run={"context_budget": 3000, "result_chars": 300, "suggest": True})})  # fmt: skip
    res = run_sft(taught)
    saved = json.loads((res.final_dir / TRAINED_RUN_FILE).read_text())
    assert saved["context_budget"] == 3000 and saved["result_chars"] == 300 and saved["suggest"] is False
    assert "max_steps" not in saved and "policy" not in saved


def test_lora_on_the_output_head_trains_and_merges_into_lm_head(cfg, tiny_model_dir) -> None:
    """The student's SFT trains lm_head in full beside the adapters (its special-token rows need
    separating): the head trains and the merged model's lm_head differs from the base's."""
    from training.experiment import STUDENT_SFT_LORA
    from training.sft.train import save_final

    lora = cfg.model_copy(update={"lora": cfg.lora.model_validate({**STUDENT_SFT_LORA, "r": 4, "alpha": 8})})
    trainer = build_trainer(lora, load_rows(lora.data_dir))
    head = {n: p.detach().clone() for n, p in trainer.model.named_parameters() if "lm_head" in n and p.requires_grad}
    assert head
    trainer.train()
    assert any(not torch.equal(p, head[n]) for n, p in trainer.model.named_parameters() if n in head)
    merged, _ = load_model_and_tokenizer(save_final(trainer, lora))
    base, _ = load_model_and_tokenizer(tiny_model_dir)
    assert not torch.equal(merged.lm_head.weight, base.lm_head.weight)


def test_the_completion_loss_is_the_full_head_loss_on_the_completion_tokens(tiny_model_dir) -> None:
    """The head runs at the completion's positions only, and the loss and its gradient are those of the
    full-logit cross-entropy restricted to the trained tokens (the prompt untrained)."""
    from training.sft.train import completion_loss

    model, _ = load_model_and_tokenizer(tiny_model_dir, dtype="float32", padding_side="right")
    torch.manual_seed(0)
    ids = torch.randint(0, model.config.vocab_size, (2, 24))
    labels = ids.clone()
    labels[0, :15] = -100  # row 1: the last 9 tokens are its completion
    labels[1, :20] = -100
    inputs = {"input_ids": ids, "attention_mask": torch.ones_like(ids), "labels": labels}
    loss, accuracy = completion_loss(model, inputs)
    loss.backward()
    fast = [p.grad.clone() for p in model.parameters() if p.grad is not None]
    model.zero_grad()
    logits = model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits[:, :-1]
    full = torch.nn.functional.cross_entropy(logits.transpose(1, 2), labels[:, 1:], ignore_index=-100)
    full.backward()
    slow = [p.grad for p in model.parameters() if p.grad is not None]
    assert torch.allclose(loss, full, atol=1e-5) and 0.0 <= accuracy <= 1.0
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(fast, slow, strict=True))
    # under gradient accumulation the sum is divided by the tokens of all the accumulated batches
    trained = int((labels[:, 1:] != -100).sum())
    halved, _ = completion_loss(model, inputs, num_items_in_batch=2 * trained)
    assert torch.allclose(halved, loss.detach() / 2, atol=1e-5)
