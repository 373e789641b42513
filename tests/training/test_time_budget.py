"""The wall-clock budget of SFT/RL runs: a stopped run leaves a checkpoint that `resume` continues from."""

from __future__ import annotations

import pytest

pytest.importorskip("transformers")

from transformers import TrainerControl, TrainerState  # noqa: E402

from training.common.time_budget import TimeBudget  # noqa: E402


def test_budget_spent_stops_and_saves_the_step() -> None:
    budget = TimeBudget(minutes=1e-9)
    state, control = TrainerState(global_step=3, max_steps=10), TrainerControl()
    budget.on_train_begin(None, state, control)
    budget.on_step_end(None, state, control)
    assert control.should_training_stop and control.should_save
    assert budget.stopped_early


def test_budget_left_leaves_the_loop_alone() -> None:
    budget = TimeBudget(minutes=60)
    state, control = TrainerState(global_step=3, max_steps=10), TrainerControl()
    budget.on_train_begin(None, state, control)
    budget.on_step_end(None, state, control)
    assert not control.should_training_stop and not control.should_save
