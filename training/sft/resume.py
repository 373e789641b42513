"""The partial record of an SFT data run and its progress.

``TrajectoryLog`` keeps ``trajectories.partial.jsonl`` in the data dir: a header line with the data
configuration (``data_config``: the questions, the teacher section, the corpus), then one
line per finished trajectory (``{"trajectory": ...}``, the ``TeacherTrajectory`` as JSON), appended,
flushed and fsync'd as soon as its run ends (thread-safe). A resumed run (``resume = true``) loads the
trajectories recorded under the same configuration and runs only the others (``training.sft.data.collect``
asks ``recorded``); a line that does not parse (a line torn by a kill) is dropped with a warning and its
question runs again; a record of another configuration is refused (``ResumeRefused``), never mixed in.
A run stopped by a failed call of the model (``RunState.status == "failed"``) or one that absorbed such a
call (``TeacherTrajectory.llm_errors``) is not recorded: it runs again on resume. The record stays after the dataset is written.

Progress: each trajectory run prints ``[teacher] n/N <what it was>; elapsed, ETA`` (n counts the resumed
ones; the ETA is the mean time of this run's trajectories times those left).
"""

from __future__ import annotations

import json
import os
import sys
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from training.config import SFTRunConfig
from training.sft.data import TeacherTrajectory, TrainingQuestion

PARTIAL = "trajectories.partial.jsonl"


class ResumeRefused(ValueError):
    """The partial record was written under another data configuration."""


def data_config(cfg: SFTRunConfig) -> dict[str, Any]:
    """What the recorded trajectories depend on: the questions (path, offset, limit), the teacher section
    (its ``workers`` aside: a run may resume with more threads) and the corpus searched. The acceptance
    settings are left out: trajectories are judged after they are recorded, so a record may be judged
    again under other settings."""
    q = cfg.questions
    return {
        "questions": None if q is None else {"path": str(q.path), "offset": q.offset, "limit": q.limit},
        "corpus": None if cfg.corpus is None else cfg.corpus.model_dump(mode="json"),
        "teacher": cfg.teacher.model_dump(mode="json", exclude={"workers"}),
    }


def finished(traj: TeacherTrajectory) -> bool:
    """The run neither failed nor absorbed a failed model call (``TeacherTrajectory.llm_errors``, e.g. a
    reader's error turned "not found"): such a run is retried on resume."""
    return traj.run.status != "failed" and not traj.llm_errors


def clock_text(seconds: float) -> str:
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s" if s >= 60 else f"{s}s"


def _key(teacher: str, question_id: str) -> str:
    return f"{teacher}/{question_id}"


def _line(traj: TeacherTrajectory) -> str:
    return json.dumps({"trajectory": traj.model_dump(mode="json")}, ensure_ascii=False) + "\n"


def _warn(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


class TrajectoryLog:
    """The partial record of a data run and its progress (see module docstring)."""

    def __init__(
        self,
        path: Path,
        config: dict[str, Any],
        *,
        resume: bool = True,
        describe: Callable[[TeacherTrajectory], str] = lambda t: t.question_id,
        out: Callable[[str], None] = print,
        warn: Callable[[str], None] = _warn,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.path, self.describe, self.out, self.clock = path, describe, out, clock
        self.config = json.loads(json.dumps(config))  # as the header reads back
        self.done: dict[str, TeacherTrajectory] = {}
        self.expected: set[str] = set()
        self.resumed = self.ran = 0
        self._lock = threading.Lock()
        self._start: float | None = None  # the first ``expect``: the work starts (models loaded)
        path.parent.mkdir(parents=True, exist_ok=True)
        if resume and path.is_file():
            self._load(warn)
        else:
            self._rewrite()

    def recorded(self, teacher: str, question_id: str) -> TeacherTrajectory | None:
        return self.done.get(_key(teacher, question_id))

    def expect(self, teacher: str, questions: Sequence[TrainingQuestion]) -> None:
        """Count ``questions`` of ``teacher`` into the total (once each); say how many are resumed."""
        if self._start is None:
            self._start = self.clock()
        keys = {_key(teacher, q.id) for q in questions} - self.expected
        if not keys:
            return
        self.expected |= keys
        resumed = len(keys & self.done.keys())
        self.resumed += resumed
        self.out(f"[teacher] {teacher}: {len(keys)} trajectories, {resumed} resumed from {self.path}; "
                 f"{len(keys) - resumed} to run ({self.resumed}/{len(self.expected)} done)")  # fmt: skip

    def add(self, traj: TeacherTrajectory) -> None:
        """Record a finished trajectory (one line, fsync'd) unless its run failed; print the progress."""
        with self._lock:
            if finished(traj):
                self._append(traj)
                self.done[_key(traj.teacher, traj.question_id)] = traj
            self.ran += 1
            n, total = self.resumed + self.ran, max(len(self.expected), self.resumed + self.ran)
            elapsed = self.clock() - (self._start if self._start is not None else self.clock())
            eta = elapsed / self.ran * (total - n)
            note = "" if finished(traj) else " (a model call failed: not recorded, runs again on resume)"
            self.out(f"[teacher] {n}/{total} {self.describe(traj)}{note}; "
                     f"elapsed {clock_text(elapsed)}, ETA {clock_text(eta)}")  # fmt: skip

    def _append(self, traj: TeacherTrajectory) -> None:
        with self.path.open("a", encoding="utf-8") as f:
            f.write(_line(traj))
            f.flush()
            os.fsync(f.fileno())

    def _load(self, warn: Callable[[str], None]) -> None:
        text = self.path.read_text(encoding="utf-8")
        header: dict[str, Any] | None = None
        torn = 0
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
                if header is None and "config" in obj:
                    header = obj["config"]
                    continue
                traj = TeacherTrajectory.model_validate(obj["trajectory"])
            except (json.JSONDecodeError, ValidationError, KeyError, TypeError) as exc:
                torn += 1
                warn(f"[teacher] {self.path}:{n}: unreadable line dropped, its question runs again ({exc})"[:300])
                continue
            self.done[_key(traj.teacher, traj.question_id)] = traj
        if (header is not None or self.done) and header != self.config:
            self._refuse(header)
        if torn or not text.endswith("\n"):  # the next line must not be glued to a torn one
            self._rewrite()

    def _refuse(self, header: dict[str, Any] | None) -> None:
        changed = [k for k in self.config if (header or {}).get(k) != self.config[k]] or ["the header"]
        raise ResumeRefused(
            f"{self.path} records trajectories of another data configuration ({', '.join(changed)} changed "
            "since it was written); not mixing them: delete that file (or set resume = false) to start over, "
            "or set another data_dir"
        )

    def _rewrite(self) -> None:
        """The header and the recorded trajectories, written to a new file that replaces the record."""
        tmp = self.path.with_name(self.path.name + ".tmp")
        with tmp.open("w", encoding="utf-8") as f:
            f.write(json.dumps({"config": self.config}, ensure_ascii=False) + "\n")
            for traj in self.done.values():
                f.write(_line(traj))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.path)
