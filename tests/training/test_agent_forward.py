"""The loss's forward over an RL step's turns: the frozen layers below the adapter are computed once per
shared prefix, and the logits and gradients are those of the plain full forward."""

from __future__ import annotations

import pytest
import torch

from training.rl.agent_forward import PrefixForward, first_trained_layer


@pytest.fixture(scope="module")
def lora_model():
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)  # fmt: skip
    base = Qwen2ForCausalLM(config).float()
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj", "down_proj"], layers_to_transform=[2, 3],
                      init_lora_weights=False)  # fmt: skip
    return get_peft_model(base, lora)


def _turns() -> list[list[int]]:
    g = torch.Generator().manual_seed(1)
    shared = torch.randint(0, 97, (40,), generator=g).tolist()
    turns = [shared + torch.randint(0, 97, (n,), generator=g).tolist() for n in (9, 15, 4)]
    longer = turns[0] + [8, 9, 10, 11, 12]  # the cached turn is a strict prefix of this one
    return sorted(
        [*turns, longer, turns[1][:48] + [5, 6, 7], torch.randint(0, 97, (30,), generator=g).tolist()]
    )


def _plain(model, ids: list[int], n: int) -> torch.Tensor:
    return model(input_ids=torch.tensor([ids]), logits_to_keep=n + 1, use_cache=False).logits[0, :-1]


def test_the_split_is_the_first_adapted_layer(lora_model) -> None:
    assert first_trained_layer(lora_model) == 2


def test_logits_equal_the_full_forward_and_shared_prefixes_are_computed_once(lora_model) -> None:
    forward = PrefixForward(lora_model)
    for ids in _turns():
        with torch.no_grad():
            assert torch.allclose(forward.completion_logits(ids, 6), _plain(lora_model, ids, 6), atol=1e-5)
    assert forward.reused >= 3 * 40  # the 40-token prefix after its first turn
    assert forward.evaluated < sum(map(len, _turns())) - 3 * 40 + 1


def test_gradients_equal_the_full_forward(lora_model) -> None:
    params = [p for p in lora_model.parameters() if p.requires_grad]

    def grads(fn) -> list[torch.Tensor]:
        lora_model.zero_grad(set_to_none=True)
        for ids in _turns():
            torch.log_softmax(fn(ids), -1)[:, 3].sum().backward()
        return [p.grad.clone() for p in params]

    forward = PrefixForward(lora_model)
    split, plain = (
        grads(lambda ids: forward.completion_logits(ids, 6)),
        grads(lambda ids: _plain(lora_model, ids, 6)),
    )
    assert all(torch.allclose(a, b, atol=1e-5, rtol=1e-4) for a, b in zip(split, plain, strict=True))
    assert any(bool(g.abs().sum() > 0) for g in split)


def test_reference_logits_are_the_model_without_its_adapter(lora_model) -> None:
    forward = PrefixForward(lora_model)
    ids = _turns()[0]
    with torch.no_grad():
        adapted = forward.completion_logits(ids, 6)
        reference = forward.reference_logits(ids, 6)
        with lora_model.disable_adapter():
            plain = _plain(lora_model, ids, 6)
    assert torch.allclose(reference, plain, atol=1e-5)
    assert not torch.allclose(adapted, reference, atol=1e-3)  # the adapter (random B) changes the policy


def _last_layer_model(targets: list[str]):
    from peft import LoraConfig, get_peft_model
    from transformers import Qwen2Config, Qwen2ForCausalLM

    torch.manual_seed(0)
    config = Qwen2Config(vocab_size=97, hidden_size=32, intermediate_size=64, num_hidden_layers=4,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)  # fmt: skip
    lora = LoraConfig(r=4, lora_alpha=8, target_modules=targets, layers_to_transform=[3], init_lora_weights=False)
    return get_peft_model(Qwen2ForCausalLM(config).float(), lora)


def _grads(model, fn) -> list[torch.Tensor]:
    model.zero_grad(set_to_none=True)
    for ids in _turns():
        torch.log_softmax(fn(ids), -1)[:, 3].sum().backward()
    return [p.grad.clone() for p in model.parameters() if p.requires_grad]


def test_prompt_without_gradient_keeps_the_logits_and_only_drops_the_prompt_key_value_terms(lora_model) -> None:
    """prompt_grad=False: the same logits; the gradient equals the exact one when nothing adapted shapes
    the prompt's keys and values (only the last layer adapted, not its k/v projections), and differs
    only by those terms when they exist."""
    detached = PrefixForward(lora_model, prompt_grad=False)
    for ids in _turns():
        with torch.no_grad():
            assert torch.allclose(detached.completion_logits(ids, 6), _plain(lora_model, ids, 6), atol=1e-5)
    qo = _last_layer_model(["q_proj", "o_proj", "down_proj"])
    fast = PrefixForward(qo, prompt_grad=False)
    cut, exact = _grads(qo, lambda ids: fast.completion_logits(ids, 6)), _grads(qo, lambda ids: _plain(qo, ids, 6))
    assert all(torch.allclose(a, b, atol=1e-5, rtol=1e-4) for a, b in zip(cut, exact, strict=True))
    assert any(bool(g.abs().sum() > 0) for g in cut)
    kv = _last_layer_model(["v_proj"])
    fast = PrefixForward(kv, prompt_grad=False)
    cut, exact = _grads(kv, lambda ids: fast.completion_logits(ids, 6)), _grads(kv, lambda ids: _plain(kv, ids, 6))
    flat = torch.cat([g.flatten() for g in cut]), torch.cat([g.flatten() for g in exact])
    assert not torch.allclose(*flat, atol=1e-6)  # the prompt's values carried gradient the cut drops
    assert float(torch.nn.functional.cosine_similarity(*flat, dim=0)) > 0.5


def test_prompt_without_gradient_reuses_the_top_layers_prompt_prefix_exactly(lora_model) -> None:
    """prompt_grad=False keeps the adapted layers' detached prompt keys and values from turn to turn (one
    cache with the adapter, one without): logits, reference logits and gradients are those of a forward
    that recomputes every prompt, and the shared prefixes are computed once."""
    params = [p for p in lora_model.parameters() if p.requires_grad]

    def run(fresh: bool) -> tuple[list[torch.Tensor], list[torch.Tensor], PrefixForward]:
        lora_model.zero_grad(set_to_none=True)
        forward, refs = PrefixForward(lora_model, prompt_grad=False), []
        for ids in _turns():
            if fresh:
                forward = PrefixForward(lora_model, prompt_grad=False)
            torch.log_softmax(forward.completion_logits(ids, 6), -1)[:, 3].sum().backward()
            refs.append(forward.reference_logits(ids, 6))
        return [p.grad.clone() for p in params], refs, forward

    cached, cached_refs, forward = run(fresh=False)
    recomputed, fresh_refs, _ = run(fresh=True)
    assert all(torch.allclose(a, b, atol=1e-5, rtol=1e-4) for a, b in zip(cached, recomputed, strict=True))
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(cached_refs, fresh_refs, strict=True))
    assert any(bool(g.abs().sum() > 0) for g in cached)
    assert forward.top_reused >= 2 * 3 * 40  # the 40-token prefix, with and without the adapter
    with torch.no_grad(), lora_model.disable_adapter():
        assert torch.allclose(cached_refs[-1], _plain(lora_model, _turns()[-1], 6), atol=1e-5)
