"""Stop a Trainer cleanly when a wall-clock budget is spent (the run still saves its final model).

Used by SFT and RL runs on shared CPUs, where a step can take minutes: ``max_train_minutes`` in the
run config bounds the training loop; the step in progress finishes and is saved as a checkpoint (so
``resume`` continues from it in the next invocation, across working sessions), then ``save_final`` runs."""

from __future__ import annotations

import time
from typing import Any

from transformers import TrainerCallback


class TimeBudget(TrainerCallback):
    def __init__(self, minutes: float) -> None:
        self.seconds = 60.0 * minutes
        self.started: float | None = None
        self.stopped_early = False

    def on_train_begin(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        self.started = time.perf_counter()

    def on_step_end(self, args: Any, state: Any, control: Any, **kwargs: Any) -> None:
        if self.started is not None and time.perf_counter() - self.started > self.seconds:
            control.should_training_stop = True
            control.should_save = True
            self.stopped_early = state.global_step < state.max_steps
