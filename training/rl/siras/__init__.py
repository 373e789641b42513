"""SIRAS advantage shaping for GRPO (DESIGN.md §5): pure, vectorised functions, no trainer state.

Entry points: :func:`shape_advantages` (one sibling group), :func:`shape_batch` (a batch, with
s_batch), :func:`positive_soft_clip`, :class:`SirasConfig`, :class:`SiblingGroup`,
:class:`StructureMarkers` (structural tokens read off a tokenizer).
"""

from training.rl.siras.chunking import StructureMarkers, chunk_index, chunk_starts
from training.rl.siras.config import SirasConfig
from training.rl.siras.dtw import band_mask, dtw_batch, positional_path
from training.rl.siras.shape import (
    ShapeStats,
    SiblingGroup,
    batch_scale,
    classify,
    length_scores,
    positive_soft_clip,
    shape_advantages,
    shape_batch,
)
from training.rl.siras.weights import GroupWeights, group_weights, mean_match

__all__ = [
    "GroupWeights",
    "ShapeStats",
    "SiblingGroup",
    "SirasConfig",
    "StructureMarkers",
    "band_mask",
    "batch_scale",
    "chunk_index",
    "chunk_starts",
    "classify",
    "dtw_batch",
    "group_weights",
    "length_scores",
    "mean_match",
    "positional_path",
    "positive_soft_clip",
    "shape_advantages",
    "shape_batch",
]
