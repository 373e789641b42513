"""SFT on the chat-with-tools dataset with TRL's `SFTTrainer`.

- rows: ``prompt`` / ``completion`` / ``tools`` (``training.sft.data``), tokenized here with the
  student's own chat template (the one it is served with: Qwen2.5's for the packaged 0.5B) and the
  rows' tool specs (the agent registry's): ``input_ids`` = prompt rendered with the generation prompt +
  the assistant turn, ``completion_mask`` = 1 on the assistant turn only, so neither the prompt (system,
  question, folded blocks, tool results of earlier turns) nor tool results are trained (assistant-only
  loss: ``completion_loss`` runs the output head at those positions only). Tool-call arguments stored
  as JSON strings are parsed back to objects first (Qwen2.5's template would otherwise quote them twice);
  rows longer than ``max_length`` are dropped and counted, never truncated into a broken turn;
- optional LoRA (peft), merged into the final model by default so RL loads a plain model;
- checkpoints every ``save_steps`` in ``output_dir``; ``resume=true`` continues from the newest one;
- the final model + tokenizer (original inference template) go to ``output_dir/final``.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel

from eventfold.run_options import TRAINED_RUN_FILE, trained_run_options
from training.common.loading import load_model_and_tokenizer, resolve_model_dir
from training.common.time_budget import TimeBudget
from training.config import LoraSection, ModelSection, SFTRunConfig
from training.sft.data import row_tools

log = logging.getLogger(__name__)


class SFTResult(BaseModel):
    output_dir: Path
    final_dir: Path
    global_step: int
    train_loss: float | None
    resumed_from: str | None
    rows: int
    dropped_too_long: int = 0
    seconds_per_step: float | None = None
    tokens_per_second: float | None = None  # prompt + completion tokens through forward/backward


def ensure_model(section: ModelSection) -> Path:
    """The loadable HF directory of the student: the tiny offline model built first when asked, a GGUF
    (file or packaged name) dequantized once into the cache, or the directory itself."""
    if section.build_tiny and section.path is not None and not (section.path / "config.json").is_file():
        from training.common.tiny import build_tiny_model

        build_tiny_model(section.path)
    return resolve_model_dir(section.path, packaged=section.packaged)


def peft_config(lora: LoraSection) -> Any | None:
    if not lora.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules,
        layers_to_transform=lora.layers, task_type="CAUSAL_LM", modules_to_save=lora.modules_to_save,
    )


def load_rows(data_dir: Path) -> list[dict[str, Any]]:
    path = data_dir / "train.jsonl"
    if not path.is_file():
        raise FileNotFoundError(f"no SFT dataset at {path}; build one with `eventfold train sft-data`")
    rows = [json.loads(x) for x in path.read_text(encoding="utf-8").splitlines() if x.strip()]
    if not rows:
        raise ValueError(f"{path} is empty (the manifest's rejection_reasons say why no trajectory was kept)")
    for i, r in enumerate(rows[:50]):
        missing = {"prompt", "completion", "tools"} - set(r)
        if missing:
            raise ValueError(f"{path}: row {i + 1} lacks {sorted(missing)}")
    return [{"prompt": r["prompt"], "completion": r["completion"], "tools": r["tools"]} for r in rows]


def _object_arguments(message: dict[str, Any]) -> dict[str, Any]:
    calls = message.get("tool_calls")
    if not calls:
        return message
    fixed = []
    for c in calls:
        fn = dict(c.get("function", c))
        if isinstance(fn.get("arguments"), str):
            fn["arguments"] = json.loads(fn["arguments"] or "{}")
        fixed.append({"type": "function", "function": fn})
    return {**message, "tool_calls": fixed}


class TokenizedRows(BaseModel):
    rows: list[dict[str, list[int]]]
    dropped_too_long: int
    trained_tokens: int
    total_tokens: int


def render_turn(row: dict[str, Any], tokenizer: Any) -> tuple[str, str]:
    """The row's prompt (with the generation prompt) and its whole conversation, as the student's chat
    template renders them for training, with the row's tool specs and tool-call arguments as objects."""
    prompt = [_object_arguments(m) for m in row["prompt"]]
    completion = [_object_arguments(m) for m in row["completion"]]
    kw: dict[str, Any] = {"tools": row_tools(row) or None, "tokenize": False}
    return (tokenizer.apply_chat_template(prompt, add_generation_prompt=True, **kw),
            tokenizer.apply_chat_template(prompt + completion, **kw))


def tokenize_rows(rows: list[dict[str, Any]], tokenizer: Any, max_length: int) -> TokenizedRows:
    """``input_ids`` + ``completion_mask`` per row, rendered with the tokenizer's chat template."""
    out, dropped, trained, total = [], 0, 0, 0
    for i, r in enumerate(rows):
        prompt_text, full_text = render_turn(r, tokenizer)
        if not full_text.startswith(prompt_text):
            raise ValueError(f"row {i + 1}: the chat template does not render the prompt as a prefix of the conversation")
        p_ids = tokenizer(prompt_text, add_special_tokens=False)["input_ids"]
        c_ids = tokenizer(full_text[len(prompt_text) :], add_special_tokens=False)["input_ids"]
        if len(p_ids) + len(c_ids) > max_length:
            dropped += 1
            continue
        out.append({"input_ids": p_ids + c_ids, "completion_mask": [0] * len(p_ids) + [1] * len(c_ids)})
        trained += len(c_ids)
        total += len(p_ids) + len(c_ids)
    if not out:
        raise ValueError(f"all {len(rows)} SFT rows are longer than max_length={max_length} tokens")
    return TokenizedRows(rows=out, dropped_too_long=dropped, trained_tokens=trained, total_tokens=total)


def last_checkpoint(output_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None


def completion_loss(model: Any, inputs: dict[str, Any], num_items_in_batch: Any = None) -> tuple[Any, float]:
    """Cross-entropy on the completion's tokens, with the output head applied at those positions only
    (``logits_to_keep``): an agent turn's prompt is ~2,000 tokens and its call ~30, and the head over
    the 151,936-token vocabulary at every prompt position cost more than the top layers' backward.
    Returns the loss (summed over the batch's trained tokens, divided by ``num_items_in_batch`` when
    given, as ``Trainer`` accumulates) and the top-1 accuracy on those tokens."""
    labels = inputs["labels"][:, 1:]
    keep = (labels != -100).any(dim=0).nonzero().squeeze(-1)
    kwargs = {k: inputs[k] for k in ("attention_mask", "position_ids") if k in inputs}
    logits = model(input_ids=inputs["input_ids"], logits_to_keep=keep, use_cache=False, **kwargs).logits
    target = labels[:, keep]
    loss = torch.nn.functional.cross_entropy(logits.float().transpose(1, 2), target, ignore_index=-100, reduction="sum")
    trained = (target != -100).sum()
    with torch.no_grad():
        right = ((logits.argmax(-1) == target) & (target != -100)).sum()
    denominator = num_items_in_batch if num_items_in_batch is not None else trained.clamp(min=1)
    return loss / denominator, float(right) / max(1, int(trained))


def _completion_trainer(base: type) -> type:
    class CompletionSFTTrainer(base):  # type: ignore[misc, valid-type]
        """TRL's SFTTrainer with ``completion_loss`` (TRL's own loss runs the head at every position)."""

        def compute_loss(self, model: Any, inputs: dict[str, Any], return_outputs: bool = False,
                         num_items_in_batch: Any = None) -> Any:  # fmt: skip
            loss, accuracy = completion_loss(model, inputs, num_items_in_batch)
            self._metrics["train" if model.training else "eval"]["mean_token_accuracy"].append(accuracy)
            return (loss, None) if return_outputs else loss

    return CompletionSFTTrainer


def build_trainer(cfg: SFTRunConfig, rows: list[dict[str, Any]]) -> Any:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer = load_model_and_tokenizer(ensure_model(cfg.model), dtype=cfg.model.dtype, padding_side="right")
    data = tokenize_rows(rows, tokenizer, cfg.max_length)
    if data.dropped_too_long:
        log.warning("SFT: %d of %d rows are longer than max_length=%d and are left out",
                    data.dropped_too_long, len(rows), cfg.max_length)
    o = cfg.optim
    args = SFTConfig(
        output_dir=str(cfg.output_dir),
        completion_only_loss=True,  # with `completion_mask`: only the assistant turn is trained
        max_length=cfg.max_length,
        learning_rate=o.learning_rate,
        max_steps=o.max_steps,
        num_train_epochs=o.num_train_epochs,
        per_device_train_batch_size=o.per_device_train_batch_size,
        gradient_accumulation_steps=o.gradient_accumulation_steps,
        warmup_steps=o.warmup_steps,
        weight_decay=o.weight_decay,
        max_grad_norm=o.max_grad_norm,
        bf16=o.bf16,
        logging_steps=o.logging_steps,
        save_steps=o.save_steps,
        save_total_limit=o.save_total_limit,
        seed=o.seed,
        report_to="none",
        use_cpu=not torch.cuda.is_available(),
        dataloader_num_workers=0,
        # explicit: TRL's SFTConfig turns checkpointing on by default, and with adapters that makes the
        # inputs require grad, so the backward runs through every layer, not only the adapted top ones
        gradient_checkpointing=o.gradient_checkpointing,
    )
    trainer = _completion_trainer(SFTTrainer)(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(data.rows),
        processing_class=tokenizer,
        peft_config=peft_config(cfg.lora),
        callbacks=[TimeBudget(o.max_train_minutes)] if o.max_train_minutes else None,
    )
    trainer.eventfold_data = data
    return trainer


def save_final(trainer: Any, cfg: SFTRunConfig) -> Path:
    final = cfg.output_dir / "final"
    model = trainer.model
    if cfg.lora.enabled and cfg.lora.merge and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(final)
    trainer.processing_class.save_pretrained(final)  # keeps the inference chat template
    if cfg.questions is not None:  # rows recorded by this config's teacher: serve the student as they ran
        run = json.dumps(trained_run_options(cfg.teacher.run), indent=1)
        (final / TRAINED_RUN_FILE).write_text(run + "\n", encoding="utf-8")
    return final


def training_rows(cfg: SFTRunConfig) -> list[dict[str, Any]]:
    """The rows of ``data_dir`` and of each of ``extra_data_dirs``, in that order."""
    return [r for d in (cfg.data_dir, *cfg.extra_data_dirs) for r in load_rows(d)]


def run_sft(cfg: SFTRunConfig) -> SFTResult:
    rows = training_rows(cfg)
    trainer = build_trainer(cfg, rows)
    resume = last_checkpoint(cfg.output_dir) if cfg.resume else None
    if resume:
        log.info("resuming SFT from %s", resume)
    start_step = int(resume.rsplit("-", 1)[1]) if resume else 0
    started = time.perf_counter()
    out = trainer.train(resume_from_checkpoint=resume)
    seconds = time.perf_counter() - started
    final = save_final(trainer, cfg)
    data = trainer.eventfold_data
    steps = max(1, trainer.state.global_step - start_step)
    o = cfg.optim
    row_tokens = data.total_tokens / max(1, len(data.rows))
    return SFTResult(
        output_dir=cfg.output_dir, final_dir=final, global_step=trainer.state.global_step,
        train_loss=getattr(out, "training_loss", None), resumed_from=resume, rows=len(data.rows),
        dropped_too_long=data.dropped_too_long, seconds_per_step=seconds / steps,
        tokens_per_second=steps * o.per_device_train_batch_size * o.gradient_accumulation_steps * row_tokens / seconds,
    )
