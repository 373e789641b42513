"""Every SIRAS coefficient in one validated config, with documented defaults and ablation switches.

Notation follows DESIGN.md §5. Defaults are chosen for 0/1 verifiable rewards and rollouts of
hundreds to thousands of tokens; all are plain fields so a YAML/TOML training config can set them.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SirasConfig(BaseModel):
    """SIRAS advantage shaping (chunk → align → weigh → multiply → mean-match; degenerate residuals).

    Sign rule (tested): with ``0 < u_min <= 1 <= u_max`` every valid token of a non-degenerate rollout
    gets a shaped advantage of exactly the sign of its GRPO advantage A_j (never 0, never flipped):
    additive mean-matching shifts the clipped multipliers by δ = 1 − mean(clip(u)) > −u_min, so every
    final multiplier is > 0. With ``u_min = 0`` a token may get 0 but never the opposite sign.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(True, description="False: return the plain GRPO advantage on every token")

    # 1. chunking
    chunking: Literal["hybrid", "structure", "fixed"] = Field(
        "hybrid",
        description="hybrid = structural markers + surprise peaks + max length; structure = no surprise "
        "splits; fixed = max length only (ablations)",
    )
    max_chunk_len: int = Field(64, ge=1, description="a chunk never exceeds this many tokens")
    min_chunk_len: int = Field(
        8, ge=1, description="no surprise split closer than this to the previous split"
    )
    surprise_threshold: float = Field(
        2.5, ge=0.0, description="a token with −log p above this (nats) may open a chunk"
    )
    surprise_z: float = Field(
        2.5, ge=0.0, description="…and above mean + z·std of its rollout's surprise (peaks, not noise)"
    )

    # 2. similarity, alignment, clustering
    ngram: int = Field(
        2,
        ge=1,
        le=4,
        description="chunk similarity = Dice overlap of the sets of token 1..ngram-grams "
        "inside each chunk (exact n-grams, no hashing: unrelated chunks score by their real overlap)",
    )
    alignment: Literal["dtw", "positional"] = Field(
        "dtw", description="dtw = banded DTW over chunks; positional = chunk i ↔ chunk i (ablation)"
    )
    band: float = Field(
        0.1, gt=0.0, le=1.0, description="DTW band half-width as a fraction of the longer chunk sequence"
    )
    min_band: int = Field(2, ge=1, description="DTW band half-width lower bound in chunks")
    cluster: bool = Field(True, description="average-linkage clustering credits reordered shared chunks")
    cluster_cut: float = Field(
        0.25, gt=0.0, lt=1.0, description="average-linkage cut height (1 − similarity)"
    )
    cluster_max_match: float = Field(
        0.8, gt=0.0, le=1.0, description="only chunks whose aligned match is below this are clustered"
    )
    cluster_max_chunks: int = Field(
        2000,
        ge=2,
        description="cost cap: with more candidate chunks clustering is skipped for that group "
        "(logged as a warning and counted in ShapeStats.cluster_skipped / siras/cluster_skipped)",
    )

    # 3. weights and multipliers
    gamma: float = Field(1.0, gt=0.0, description="divergence exponent: d_c = (1 − m_c)^γ")
    eps_w: float = Field(0.2, gt=0.0, le=1.0, description="weight floor: ω_c = ε_w + (1 − ε_w)·d_c·g_c")
    gate: bool = Field(True, description="Jensen–Shannon gate on surprise profiles (False: g_c = 1)")
    gate_floor: float = Field(0.5, ge=0.0, le=1.0, description="g_c = floor + (1 − floor)·min(1, JS/js_ref)")
    js_ref: float = Field(0.1, gt=0.0, le=1.0, description="JS divergence (bits) at which the gate saturates")
    surprise_bins: tuple[float, ...] = Field(
        (0.5, 1.0, 2.0, 4.0, 8.0), description="inner bin edges (nats) of a chunk's surprise profile"
    )
    u_min: float = Field(0.25, ge=0.0, le=1.0, description="token multipliers are clipped to [u_min, u_max]")
    u_max: float = Field(4.0, ge=1.0, description="token multipliers are clipped to [u_min, u_max]")

    # 4. degenerate groups (all rewards equal)
    residual: bool = Field(True, description="degenerate-group residuals (False: GRPO's zero advantage)")
    success_threshold: float = Field(
        0.5,
        description="a degenerate group is all-correct when its rollouts' success score is >= this. The "
        "success score is the reward column named by success_reward (e.g. the correctness reward of a "
        "composite), else the total reward — so with a composite total, name the correctness column",
    )
    success_reward: str | None = Field(
        None, description="name of the reward function whose value decides success (None: the total reward)"
    )
    reward_tie_tol: float = Field(1e-6, ge=0.0, description="rewards within this are equal (degenerate)")
    lam: float = Field(0.25, ge=0.0, description="λ: all-correct residual scale (× s_batch)")
    eta: float = Field(0.1, ge=0.0, description="η: all-wrong residual scale (× s_batch)")
    rho: float = Field(0.1, gt=0.0, description="ρ: q_j = −(T_j − T̄)/max(σ_T, ρ·T̄) over non-empty rollouts")
    s_batch_fallback: float = Field(
        0.0, ge=0.0, description="s_batch when a batch has no non-degenerate rollout (trainer: last seen)"
    )

    # 5. positive-advantage soft clip, on the shaped token advantages
    positive_soft_clip: bool = Field(
        True,
        description="soft-clip positive shaped token advantages: A_jt ← c·tanh(A_jt / c) where A_jt > 0 "
        "(negative ones untouched); applied after shaping, so large multipliers on winning tokens saturate",
    )
    soft_clip_level: float = Field(1.0, gt=0.0, description="c: the level positive token advantages approach")

    @model_validator(mode="after")
    def _check(self) -> SirasConfig:
        if list(self.surprise_bins) != sorted(self.surprise_bins) or any(b <= 0 for b in self.surprise_bins):
            raise ValueError(f"surprise_bins must be positive and increasing (got {self.surprise_bins})")
        return self

    @property
    def reads_logprobs(self) -> bool:
        """Whether shaping reads token surprise: only the JS gate and hybrid chunking do, so without them
        the trainer skips the extra no-grad forward pass that would compute the log-probs."""
        return self.gate or self.chunking == "hybrid"
