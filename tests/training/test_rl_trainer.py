"""One CPU GRPO step of the tiny model with SIRAS: it runs, moves parameters, and the loss sees (B, T)."""

from __future__ import annotations

import pytest
import torch
from datasets import Dataset

from training.common.loading import load_model_and_tokenizer
from training.common.tiny import build_tiny_model
from training.rl.siras import SirasConfig
from training.rl.trainer import SirasGRPOTrainer


def digit_reward(completions, **kwargs) -> list[float]:
    """A real (if silly) verifiable reward: share of characters that are digits."""
    out = []
    for c in completions:
        text = c if isinstance(c, str) else c[-1]["content"]
        out.append(sum(ch.isdigit() for ch in text) / max(1, len(text)))
    return out


class CapturingTrainer(SirasGRPOTrainer):
    """Records exactly what the policy loss receives."""

    seen: list[dict[str, torch.Tensor]]

    def _compute_loss(self, model, inputs):
        self.seen.append({k: inputs[k].detach().clone() for k in ("advantages", "completion_mask")})
        return super()._compute_loss(model, inputs)


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return build_tiny_model(tmp_path_factory.mktemp("tiny_rl"), seed=1)


def make_trainer(tiny, tmp_path, siras: SirasConfig) -> CapturingTrainer:
    from trl import GRPOConfig

    model, tok = load_model_and_tokenizer(tiny, dtype=torch.float32)
    ds = Dataset.from_list(
        [{"prompt": [{"role": "user", "content": f"What is {i} + {i + 1}?"}]} for i in range(8)]
    )
    args = GRPOConfig(
        output_dir=str(tmp_path),
        use_cpu=True,
        per_device_train_batch_size=8,
        num_generations=4,
        max_completion_length=24,
        max_steps=1,
        learning_rate=5e-2,
        logging_steps=1,
        report_to=[],
        save_strategy="no",
        seed=0,
        temperature=1.5,
        dataloader_num_workers=0,
    )
    t = CapturingTrainer(
        model=model,
        reward_funcs=[digit_reward],
        args=args,
        train_dataset=ds,
        processing_class=tok,
        siras_config=siras,
    )
    t.seen = []
    return t


def test_one_siras_step_runs_moves_params_and_loss_sees_shaped(tiny, tmp_path) -> None:
    trainer = make_trainer(tiny, tmp_path, SirasConfig(max_chunk_len=4, min_chunk_len=2))
    before = {n: p.detach().clone() for n, p in trainer.model.named_parameters()}
    trainer.train()
    changed = [n for n, p in trainer.model.named_parameters() if not torch.equal(p.detach(), before[n])]
    assert changed, "no parameter moved"
    assert trainer.seen, "the loss never ran"
    adv = trainer.seen[0]["advantages"]
    mask = trainer.seen[0]["completion_mask"]
    assert adv.dim() == 2 and adv.shape == mask.shape
    assert (adv[mask == 0] == 0).all()
    # token-level, not one value per row: some row has distinct values on its valid tokens
    assert any(len(set(adv[i][mask[i] == 1].tolist())) > 1 for i in range(adv.shape[0]))
    # exactly the tensor SIRAS produced (TRL shuffles rows between generation and loss)
    shaped = trainer.last_shaped_advantages
    key = lambda t: sorted(tuple(r.tolist()) for r in t)  # noqa: E731
    assert key(adv) == key(shaped)
    logs = {k for h in trainer.state.log_history for k in h}
    for name in (
        "siras/degenerate_frac",
        "siras/mean_abs_adv",
        "siras/multiplier_spread",
        "siras/shaping_ms",
    ):
        assert name in logs, name


def test_disabled_siras_is_plain_grpo_per_token(tiny, tmp_path) -> None:
    trainer = make_trainer(tiny, tmp_path, SirasConfig(enabled=False))
    trainer.train()
    adv, mask = trainer.seen[0]["advantages"], trainer.seen[0]["completion_mask"]
    for i in range(adv.shape[0]):
        vals = adv[i][mask[i] == 1]
        assert vals.numel() == 0 or torch.allclose(vals, vals[0].expand_as(vals))


def test_tool_result_tokens_stay_masked_and_means_hold(tiny, tmp_path) -> None:
    trainer = make_trainer(
        tiny, tmp_path, SirasConfig(max_chunk_len=4, min_chunk_len=2, positive_soft_clip=False)
    )
    trainer.model.train()
    g, t = trainer.num_generations, 20
    gen = torch.Generator().manual_seed(0)
    out = {
        "prompt_ids": torch.randint(3, 500, (g * 2, 5), generator=gen),
        "prompt_mask": torch.ones(g * 2, 5, dtype=torch.long),
        "completion_ids": torch.randint(3, 500, (g * 2, t), generator=gen),
        "completion_mask": torch.ones(g * 2, t, dtype=torch.long),
        "tool_mask": torch.ones(g * 2, t, dtype=torch.long),
    }
    out["completion_mask"][:, 16:] = 0  # padding after EOS
    out["tool_mask"][:, 6:10] = 0  # a tool response inside the completion
    rewards = torch.tensor([1.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0])  # one normal, one all-wrong group
    r = rewards.view(2, 4)
    adv = ((r - r.mean(1, keepdim=True)) / (r.std(1, keepdim=True) + 1e-4)).view(-1)  # TRL's A_j
    out["advantages"] = torch.zeros(8)  # the estimator recomputes A_j from the rewards
    trainer._siras_rewards = rewards
    shaped, stats = trainer._siras_shape(out, trainer._siras_logps(out)[0])
    valid = (out["completion_mask"] * out["tool_mask"]).bool()
    assert (shaped[~valid] == 0).all()
    assert stats.kinds == ["normal", "all_wrong"]
    for i in range(g * 2):
        assert float(shaped[i][valid[i]].mean()) == pytest.approx(float(adv[i]), abs=1e-5)


class _TwoRankAccelerator:
    """Stand-in for accelerate across 2 ranks (this process is rank 1): pads and gathers against the
    other rank's tensors, given in the order the trainer gathers them."""

    num_processes = 2
    process_index = 1

    def __init__(self, other_rank: list[torch.Tensor], device: torch.device) -> None:
        self.other = list(other_rank)
        self.device = device
        self._pending: torch.Tensor | None = None

    def pad_across_processes(self, x, dim=1, pad_index=0):
        self._pending = self.other.pop(0)
        width = max(x.shape[dim], self._pending.shape[dim])
        pad = lambda t: torch.nn.functional.pad(t, (0, width - t.shape[dim]), value=pad_index)  # noqa: E731
        self._pending = pad(self._pending)
        return pad(x)

    def gather(self, x):
        return torch.cat([self._pending, x], dim=0)


def test_sibling_group_split_across_ranks_is_gathered(tiny, tmp_path) -> None:
    """A group whose rollouts live on two ranks is shaped whole; each rank keeps its own rows."""
    trainer = make_trainer(tiny, tmp_path, SirasConfig(max_chunk_len=3, min_chunk_len=1, gate=False))
    gen = torch.Generator().manual_seed(1)
    ids = torch.randint(3, 500, (4, 12), generator=gen)
    ids[1, :6] = ids[0, :6]
    ids[3, :6] = ids[2, :6]
    mask = torch.ones(4, 12, dtype=torch.long)
    mask[2:, 9:] = 0  # rank 1's rows are shorter
    trainer._siras_rewards = torch.tensor([1.0, 0.0, 0.75, 0.25])
    full = {"completion_ids": ids, "completion_mask": mask}
    expected, _ = trainer._siras_shape(full)  # one process holding the whole group
    mine = {"completion_ids": ids[2:, :9], "completion_mask": mask[2:, :9]}
    other = [mask[:2], ids[:2]]  # order: mask, ids
    trainer.accelerator = _TwoRankAccelerator(other, torch.device("cpu"))
    got, stats = trainer._siras_shape(mine)
    assert stats.kinds == ["normal"] and got.shape == (2, 9)
    assert torch.allclose(got, expected[2:, :9])


def test_trl_is_the_pinned_version_with_the_overridden_private_methods() -> None:
    """The trainer overrides TRL private methods: the installed TRL must be in pyproject's pinned range,
    and those methods must still exist with the signatures the overrides were written for."""
    import inspect
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    from packaging.requirements import Requirement
    from trl import GRPOTrainer

    meta = tomllib.loads((Path(__file__).resolve().parents[2] / "pyproject.toml").read_text())
    req = next(
        Requirement(r) for r in meta["project"]["optional-dependencies"]["train"] if r.startswith("trl")
    )
    assert req.specifier.contains(version("trl")), (req, version("trl"))
    assert not req.specifier.contains("1.17.0")  # an upper bound: a new minor release is checked first
    params = {
        "_calculate_rewards": ["self", "inputs", "prompts", "completions", "completion_ids_list"],
        "_generate_and_score_completions": ["self", "inputs"],
        "_compute_loss": ["self", "model", "inputs"],
    }
    for name, want in params.items():
        assert list(inspect.signature(getattr(GRPOTrainer, name)).parameters) == want, name
    sig = inspect.signature(GRPOTrainer._get_per_token_logps_and_entropies).parameters
    assert {"model", "input_ids", "attention_mask", "logits_to_keep", "batch_size", "compute_entropy"} <= set(
        sig
    )


def test_unscorable_rollouts_stay_nan_and_get_zero_advantage(tiny, tmp_path) -> None:
    """A rollout whose reward functions all returned None is NaN (excluded), not 0 as nansum made it."""
    trainer = make_trainer(tiny, tmp_path, SirasConfig(max_chunk_len=4, min_chunk_len=2))
    per_func = torch.tensor([[1.0], [float("nan")], [0.0], [1.0]])
    trainer.reward_weights = torch.ones(1)
    import trl

    orig = trl.GRPOTrainer._calculate_rewards
    trl.GRPOTrainer._calculate_rewards = lambda self, *a: per_func
    try:
        trainer._calculate_rewards(None, None, None, None)
    finally:
        trl.GRPOTrainer._calculate_rewards = orig
    assert torch.isnan(trainer._siras_rewards[1]) and trainer._siras_rewards[0] == 1.0
    ids = torch.randint(3, 500, (4, 8), generator=torch.Generator().manual_seed(2))
    shaped, stats = trainer._siras_shape(
        {"completion_ids": ids, "completion_mask": torch.ones(4, 8, dtype=torch.long)}
    )
    assert (shaped[1] == 0).all() and stats.unusable == 1
    assert (shaped[0] > 0).all() and (shaped[2] < 0).all()
