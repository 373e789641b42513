"""Model and batch shapes of the device check: the student's real shape and a tiny one for CPU runs."""

from __future__ import annotations

from dataclasses import dataclass

from transformers import Qwen2Config


def student_config() -> Qwen2Config:
    """Qwen2.5-0.5B's architecture (the student's shape), for a random-init model of the real size."""
    return Qwen2Config(
        vocab_size=151936, hidden_size=896, intermediate_size=4864, num_hidden_layers=24,
        num_attention_heads=14, num_key_value_heads=2, max_position_embeddings=32768,
        rope_theta=1000000.0, rms_norm_eps=1e-6, tie_word_embeddings=True, use_cache=True,
    )  # fmt: skip


def tiny_config(vocab_size: int = 64, hidden_size: int = 32, layers: int = 2) -> Qwen2Config:
    """A tiny Qwen2 (CPU tests, and the seeded student of the learning stage)."""
    return Qwen2Config(
        vocab_size=vocab_size, hidden_size=hidden_size, intermediate_size=2 * hidden_size,
        num_hidden_layers=layers, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=512, tie_word_embeddings=True, use_cache=True,
    )  # fmt: skip


@dataclass(frozen=True)
class BatchShape:
    """One RL batch: ``prompts`` × ``group`` rollouts of ``completion_len`` tokens after ``prompt_len``;
    the update runs in micro-batches of ``micro_batch`` rows; log-probs in chunks of ``logit_chunk``."""

    prompts: int
    group: int
    prompt_len: int
    completion_len: int
    micro_batch: int
    logit_chunk: int = 1024

    @property
    def rows(self) -> int:
        return self.prompts * self.group

    @property
    def name(self) -> str:
        return f"{self.prompts}x{self.group}x{self.completion_len}"

    def full_logits_gib(self, vocab_size: int) -> float:
        """GiB the float32 logits of one micro-batch would take unchunked (what chunking avoids)."""
        return self.micro_batch * (self.prompt_len + self.completion_len) * vocab_size * 4 / 2**30


# the two batches of DESIGN §8's measurements; the tiny ones exercise the same code paths on CPU
REAL_BATCHES = (
    BatchShape(prompts=8, group=8, prompt_len=128, completion_len=1024, micro_batch=16),
    BatchShape(prompts=4, group=16, prompt_len=128, completion_len=4096, micro_batch=16),
)
TINY_BATCHES = (
    BatchShape(prompts=2, group=2, prompt_len=4, completion_len=12, micro_batch=2, logit_chunk=8),
)
