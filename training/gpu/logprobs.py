"""Per-token log-probs of given tokens without materialising the logits of the whole batch.

The last hidden states go through the output head in chunks of positions; each chunk's logits, float32
log-softmax and gather run under activation checkpointing, so forward keeps only the (N,) log-probs and
backward recomputes one chunk's logits at a time. 16 × 4,096 positions over a 151,936-token vocabulary
would need 37 GiB of float32 logits at once; a 1,024-position chunk needs 0.6 GiB.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint


def _chunk_logprobs(hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    logits = F.linear(hidden, weight).float()
    return torch.log_softmax(logits, dim=-1).gather(-1, targets.unsqueeze(-1)).squeeze(-1)


def chunked_token_logprobs(
    hidden: torch.Tensor, weight: torch.Tensor, targets: torch.Tensor, chunk: int = 1024
) -> torch.Tensor:
    """log p(targets) under ``softmax(hidden @ weight.T)``: hidden (..., H), weight (V, H), targets (...)
    → float32 (...), computed ``chunk`` positions at a time (gradients flow to hidden and weight)."""
    if chunk < 1:
        raise ValueError(f"chunk must be >= 1 (got {chunk})")
    shape = targets.shape
    h = hidden.reshape(-1, hidden.shape[-1])
    t = targets.reshape(-1)
    grad = torch.is_grad_enabled() and (h.requires_grad or weight.requires_grad)
    parts = []
    for start in range(0, t.numel(), chunk):
        hs, ts = h[start : start + chunk], t[start : start + chunk]
        if grad:
            parts.append(checkpoint(_chunk_logprobs, hs, weight, ts, use_reentrant=False))
        else:
            parts.append(_chunk_logprobs(hs, weight, ts))
    return torch.cat(parts).reshape(shape)


def sequence_logprobs(
    model: torch.nn.Module,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor | None = None,
    chunk: int = 1024,
) -> torch.Tensor:
    """(B, L-1) log-probs of ``input_ids[:, 1:]`` under a causal LM (``model.model`` + output head)."""
    body = getattr(model, model.base_model_prefix)
    hidden = body(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).last_hidden_state
    weight = model.get_output_embeddings().weight
    return chunked_token_logprobs(hidden[:, :-1], weight, input_ids[:, 1:], chunk)
