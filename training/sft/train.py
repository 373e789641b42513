"""SFT on the chat-with-tools dataset with TRL's `SFTTrainer`.

- rows: ``prompt`` / ``completion`` / ``tools`` (``training.sft.data``); ``assistant_only_loss`` and
  completion-only loss, so neither the prompt (system, question, folded blocks, tool results of
  earlier turns) nor tool results are trained; TRL swaps in its ``{% generation %}`` training
  template for known families (Qwen3's for the tiny model);
- optional LoRA (peft), merged into the final model by default so RL loads a plain model;
- checkpoints every ``save_steps`` in ``output_dir``; ``resume=true`` continues from the newest one;
- the final model + tokenizer (original inference template) go to ``output_dir/final``.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import torch
from pydantic import BaseModel

from training.common.loading import load_model_and_tokenizer
from training.config import LoraSection, ModelSection, SFTRunConfig

log = logging.getLogger(__name__)


class SFTResult(BaseModel):
    output_dir: Path
    final_dir: Path
    global_step: int
    train_loss: float | None
    resumed_from: str | None
    rows: int


def ensure_model(section: ModelSection) -> Path:
    """The model directory, building the tiny offline model there first when asked."""
    if section.build_tiny and not (section.path / "config.json").is_file():
        from training.common.tiny import build_tiny_model

        build_tiny_model(section.path)
    return section.path


def peft_config(lora: LoraSection) -> Any | None:
    if not lora.enabled:
        return None
    from peft import LoraConfig

    return LoraConfig(
        r=lora.r, lora_alpha=lora.alpha, lora_dropout=lora.dropout, target_modules=lora.target_modules,
        task_type="CAUSAL_LM",
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


def last_checkpoint(output_dir: Path) -> str | None:
    from transformers.trainer_utils import get_last_checkpoint

    return get_last_checkpoint(str(output_dir)) if output_dir.is_dir() else None


def build_trainer(cfg: SFTRunConfig, rows: list[dict[str, Any]]) -> Any:
    from datasets import Dataset
    from trl import SFTConfig, SFTTrainer

    model, tokenizer = load_model_and_tokenizer(ensure_model(cfg.model), dtype=cfg.model.dtype, padding_side="right")
    o = cfg.optim
    args = SFTConfig(
        output_dir=str(cfg.output_dir),
        assistant_only_loss=True,
        completion_only_loss=True,
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
        **({"gradient_checkpointing": True} if o.gradient_checkpointing else {}),
    )
    return SFTTrainer(
        model=model,
        args=args,
        train_dataset=Dataset.from_list(rows),
        processing_class=tokenizer,
        peft_config=peft_config(cfg.lora),
    )


def save_final(trainer: Any, cfg: SFTRunConfig) -> Path:
    final = cfg.output_dir / "final"
    model = trainer.model
    if cfg.lora.enabled and cfg.lora.merge and hasattr(model, "merge_and_unload"):
        model = model.merge_and_unload()
    model.save_pretrained(final)
    trainer.processing_class.save_pretrained(final)  # keeps the inference chat template
    return final


def run_sft(cfg: SFTRunConfig) -> SFTResult:
    rows = load_rows(cfg.data_dir)
    trainer = build_trainer(cfg, rows)
    resume = last_checkpoint(cfg.output_dir) if cfg.resume else None
    if resume:
        log.info("resuming SFT from %s", resume)
    out = trainer.train(resume_from_checkpoint=resume)
    final = save_final(trainer, cfg)
    return SFTResult(
        output_dir=cfg.output_dir, final_dir=final, global_step=trainer.state.global_step,
        train_loss=getattr(out, "training_loss", None), resumed_from=resume, rows=len(rows),
    )
