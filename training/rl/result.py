"""What an RL run returns, synchronous (``training.rl.run``) or asynchronous (``training.rl.pipeline``)."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel


class RLResult(BaseModel):
    output_dir: Path
    final_dir: Path
    global_step: int
    resumed_from: str | None
    log_path: Path
    schedule_history: list[int] = []
