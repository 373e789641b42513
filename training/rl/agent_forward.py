"""The loss's forward pass over an RL step's turns, with the frozen bottom layers computed once per shared
prefix.

With LoRA on the top layers only (``[lora] layers``), the layers below the first adapted one carry no
trainable weight: their output at a position depends only on the tokens up to it, and no gradient flows
through them. The turns of one step share long prefixes — a question's sibling rollouts open with the same
prompt, and a rollout's next turn repeats the previous turn's context up to its status line — so the
bottom layers run once per distinct prefix (a no-grad key/value cache, cut back to the common prefix of
the next turn, turns visited in sorted order), and only the top layers run with gradients, over the whole
turn from the cached states. The gradient is the full-forward one: nothing the loss differentiates is
cached.

``prompt_grad=False`` cuts the backward further, to the model's own tokens: the top layers run over the
prompt without gradients too (their keys and values cached, detached), and with gradients only at the
positions that predict the sampled call, attending to that cache. The loss is unchanged; the gradient
drops the terms that flow through the prompt's top-layer keys and values (an approximation whose cosine
to the exact gradient ``bench/rl_update.py`` reports), and the backward shrinks from the whole turn
(~2,000 positions) to its call (~40). Those detached prompt keys and values are then kept from turn to
turn like the bottom layers' (one cache with the adapter, one without it for the reference): the weights
do not change within an update, so a shared prompt prefix is the same there too, and the top layers run
without gradients over each turn's new prompt positions only.
"""

from __future__ import annotations

from typing import Any

import torch


def first_trained_layer(model: Any) -> int:
    """Index of the lowest decoder layer holding a trainable parameter; 0 (no split) when the
    embeddings train or the model is not a decoder stack of this shape."""
    try:
        stack = decoder_stack(model)
        layers = stack.layers
    except AttributeError:
        return 0
    if stack.embed_tokens.weight.requires_grad:
        return 0
    for i, layer in enumerate(layers):
        if any(p.requires_grad for p in layer.parameters()):
            return i
    return len(layers)


def decoder_stack(model: Any) -> Any:
    """The decoder (embeddings, layers, norm, rotary) of a causal LM, through a peft wrapper."""
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.model


def _head(model: Any) -> Any:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return base.lm_head


class PrefixForward:
    """``completion_logits(ids, n)``: logits predicting the last ``n`` tokens of ``ids``, the layers below
    ``split`` served from a cache of the previous call's prefix."""

    def __init__(self, model: Any, split: int | None = None, bf16: bool = False, prompt_grad: bool = True) -> None:
        self.model = model
        self.split = first_trained_layer(model) if split is None else split
        self.stack = decoder_stack(model) if self.split else None
        self.bf16 = bf16
        self.prompt_grad = prompt_grad
        self._ids: list[int] = []
        self._states: torch.Tensor | None = None  # (T, H) output of layer split-1 for self._ids
        self._cache: Any = None
        self.evaluated = 0  # bottom-layer positions computed (the rest came from the cache)
        self.reused = 0
        self._reference = False  # inside reference_logits: the adapter is off
        self._top_caches: dict[bool, tuple[list[int], Any]] = {}  # prompt_grad=False: per adapter state
        self.top_evaluated = 0  # top-layer prompt positions computed without gradients
        self.top_reused = 0

    def reset(self) -> None:
        self._ids, self._states, self._cache, self._top_caches = [], None, None, {}

    def _bottom(self, ids: list[int]) -> torch.Tensor:
        """(T, H) states entering layer ``split`` for ``ids``, no gradient, reusing the common prefix."""
        from transformers import DynamicCache
        from transformers.masking_utils import create_causal_mask

        keep = _common_prefix(self._ids, ids[:-1])  # the last id is always evaluated: its state is needed
        if self._cache is None or keep == 0:
            self._cache, keep, prefix = DynamicCache(), 0, None
        else:
            drop = self._cache.get_seq_length() - keep
            if drop > 0:  # crop takes the (negative) count of tokens to drop
                self._cache.crop(-drop)
            prefix = self._states[:keep]  # type: ignore[index]
        new = torch.tensor([ids[keep:]])
        with torch.no_grad(), torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            h = self.stack.embed_tokens(new)
            pos = torch.arange(keep, len(ids))[None]
            pe = self.stack.rotary_emb(h, pos)
            mask = create_causal_mask(
                config=self.stack.config,
                inputs_embeds=h,
                attention_mask=None,
                cache=self._cache,
                position_ids=pos,
            )
            for layer in self.stack.layers[: self.split]:
                h = layer(
                    h,
                    attention_mask=mask,
                    position_embeddings=pe,
                    position_ids=pos,
                    cache=self._cache,
                    use_cache=True,
                )
        states = h[0] if prefix is None else torch.cat([prefix, h[0]])
        self.evaluated += len(ids) - keep
        self.reused += keep
        self._ids, self._states = list(ids), states
        return states

    def completion_logits(self, ids: list[int], n: int) -> torch.Tensor:
        """(n, V) float32 logits at the positions predicting ``ids[-n:]``; gradients reach the layers
        from ``split`` up."""
        return self._logits(ids, n)

    def reference_logits(self, ids: list[int], n: int) -> torch.Tensor | None:
        """The same logits with the adapter switched off (the policy the run started from), no gradient;
        None when the model has no adapter. The bottom states come from the cache."""
        if not hasattr(self.model, "disable_adapter"):
            return None
        self._reference = True
        try:
            with torch.no_grad(), self.model.disable_adapter():
                return self._logits(ids, n)
        finally:
            self._reference = False

    def _logits(self, ids: list[int], n: int) -> torch.Tensor:
        if self.split == 0:  # no frozen layers to cache: the model's own forward
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
                out = self.model(input_ids=torch.tensor([ids]), logits_to_keep=n + 1, use_cache=False)
            return out.logits[0, :-1].float()
        states = self._bottom(ids)[None]
        return self._top(states, n) if self.prompt_grad else self._top_detached(states, n)

    def _top(self, h: torch.Tensor, n: int) -> torch.Tensor:
        from transformers.masking_utils import create_causal_mask

        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            pos = torch.arange(h.shape[1])[None]
            pe = self.stack.rotary_emb(h, pos)
            mask = create_causal_mask(
                config=self.stack.config, inputs_embeds=h, attention_mask=None, cache=None, position_ids=pos
            )
            for layer in self.stack.layers[self.split :]:
                h = layer(h, attention_mask=mask, position_embeddings=pe, position_ids=pos)
            h = self.stack.norm(h[:, -(n + 1) : -1])
            return _head(self.model)(h)[0].float()

    def _top_detached(self, h: torch.Tensor, n: int) -> torch.Tensor:
        """The top layers over the prompt without gradients (keys and values cached, the previous turn's
        common prefix reused), then with gradients at the ``n`` positions predicting the call only."""
        start = h.shape[1] - n - 1  # the position predicting the call's first token
        prompt = self._ids[:start]
        cached, cache = self._top_caches.get(self._reference, ([], None))
        keep = _common_prefix(cached, prompt)
        if cache is None or keep == 0:
            cache, keep = _empty_cache(), 0
        else:
            _cut(cache, self.split, keep)
        self.top_evaluated += start - keep
        self.top_reused += keep
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=self.bf16):
            if start > keep:
                with torch.no_grad():
                    self._top_layers(h[:, keep:start], keep, cache)
            part = self._top_layers(h[:, start:-1], start, cache)
            logits = _head(self.model)(self.stack.norm(part))[0].float()
        _cut(cache, self.split, start)  # the call's keys and values hold its graph: the prompt's stay
        self._top_caches[self._reference] = (prompt, cache)
        return logits

    def _top_layers(self, part: torch.Tensor, past: int, cache: Any) -> torch.Tensor:
        """The adapted layers over ``part`` (positions from ``past``), attending to and extending ``cache``."""
        from transformers.masking_utils import create_causal_mask

        pos = torch.arange(past, past + part.shape[1])[None]
        pe = self.stack.rotary_emb(part, pos)
        mask = create_causal_mask(config=self.stack.config, inputs_embeds=part, attention_mask=None, cache=cache,
                                  position_ids=pos, layer_idx=self.split)  # fmt: skip
        for layer in self.stack.layers[self.split :]:
            part = layer(part, attention_mask=mask, position_embeddings=pe, position_ids=pos, cache=cache,
                         use_cache=True)  # fmt: skip
        return part


def _common_prefix(a: list[int], b: list[int]) -> int:
    keep, limit = 0, min(len(a), len(b))
    while keep < limit and a[keep] == b[keep]:
        keep += 1
    return keep


def _empty_cache() -> Any:
    from transformers import DynamicCache

    return DynamicCache()


def _cut(cache: Any, split: int, length: int) -> None:
    """Keep the first ``length`` positions of the adapted layers' keys and values, detached from any graph
    (a slice of the call's keys would keep its backward alive and reach into the next turn's)."""
    for layer in cache.layers[split:]:
        if layer.is_initialized and layer.keys is not None and layer.keys.numel():
            layer.keys = layer.keys[..., :length, :].detach()
            layer.values = layer.values[..., :length, :].detach()
