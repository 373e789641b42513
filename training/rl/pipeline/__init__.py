"""Asynchronous RL pipeline: rollout workers → verification workers → learner, joined by
bounded-staleness queues (max lag k policy versions), with importance weights or lag-dropping.

Entry point: :func:`training.rl.pipeline.loop.run_pipeline` (``mode="async"`` or ``"sync"`` — the same
components run one after another, the baseline the async mode is measured against).
"""

from training.rl.pipeline.config import PipelineConfig
from training.rl.pipeline.staleness import StalenessQueue, WeightStore

__all__ = ["PipelineConfig", "StalenessQueue", "WeightStore"]
