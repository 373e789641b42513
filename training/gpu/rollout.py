"""Sampling with plain torch: a loop over a KV cache, returning the sampled tokens and their log-probs.

Prompts share one length (the device check's batches are unpadded), completions run to a fixed number
of new tokens (no EOS stop), so no padding or attention mask is needed.
"""

from __future__ import annotations

import inspect
import time
from dataclasses import dataclass

import torch


@dataclass
class Rollouts:
    completions: torch.Tensor  # (B, N) sampled token ids
    logps: torch.Tensor  # (B, N) float32 log-probs of those tokens under the sampler
    seconds: float

    @property
    def tokens_per_s(self) -> float:
        return self.completions.numel() / max(self.seconds, 1e-9)


@torch.no_grad()
def sample(
    model: torch.nn.Module, prompts: torch.Tensor, new_tokens: int, temperature: float = 1.0,
    generator: torch.Generator | None = None,
) -> Rollouts:  # fmt: skip
    """Sample ``new_tokens`` tokens after each row of ``prompts`` (B, P) at ``temperature``."""
    device = prompts.device
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    start = time.perf_counter()
    was_training = model.training
    model.eval()
    out = model(input_ids=prompts, use_cache=True, logits_to_keep=1)
    cache, logits = _cache(out), out.logits[:, -1]
    # transformers renamed the cache argument (``past_key_values`` → ``cache``); pass the one it takes
    key = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    tokens, logps = [], []
    for i in range(new_tokens):
        lp = torch.log_softmax(logits.float() / temperature, dim=-1)
        nxt = torch.multinomial(lp.exp(), 1, generator=generator)
        tokens.append(nxt)
        logps.append(lp.gather(-1, nxt))
        if i == new_tokens - 1:
            break
        out = model(input_ids=nxt, use_cache=True, **{key: cache})
        cache, logits = _cache(out), out.logits[:, -1]
    model.train(was_training)
    if device.type == "cuda":
        torch.cuda.synchronize(device)
    return Rollouts(torch.cat(tokens, 1), torch.cat(logps, 1), time.perf_counter() - start)


def _cache(out: object) -> object:
    return getattr(out, "cache", None) or out.past_key_values
