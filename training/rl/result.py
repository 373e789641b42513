"""What an RL run returns, synchronous (``training.rl.run``) or asynchronous (``training.rl.pipeline``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel

RUN_CONFIG = "run_config.json"  # the run's config, saved in its output folder beside log.jsonl


class RLResult(BaseModel):
    output_dir: Path
    final_dir: Path
    global_step: int
    resumed_from: str | None
    log_path: Path
    schedule_history: list[int] = []
