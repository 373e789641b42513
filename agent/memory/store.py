"""The memory store: folds keyed by id, their verbatim originals, and the fold/unfold rules.

Rules (checked before anything changes, so a refused operation leaves the memory untouched):

- Steps are numbered 1..n; a fold covers a closed range `start..end` of completed steps.
- Active folds never overlap. A new range may *contain* active folds entirely: they are nested
  (status "absorbed", parent = the new fold) and come back as they were when the parent is
  unfolded. A range that cuts through an active fold, or lies inside one, is refused with
  `FoldOverlapError` naming the fold and the ranges that would work.
- The original steps are the trajectory's own (steps are never changed once appended), so a fold
  stores its range, not copies: `originals(fold, steps)` is the verbatim view, keyed by fold id.
- `unfold(id)` restores the fold's steps (and its nested folds) exactly as they were rendered before
  the fold: fold then unfold is byte-exact. `unfold(id, section)` keeps the block and shows only the
  steps the section refers to (a step number, a chunk id `c:...`, or `finding N`).
- Folding exactly the range of an unfolded fold again (without a new summary) re-activates that fold
  under the same id; otherwise a new id is issued.
- Unfolding a nested (absorbed) fold, or one already unfolded, is refused with `FoldError`.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from agent.memory.blocks import Fold
from agent.memory.trajectory import CITATION_RE, Step


class FoldError(ValueError):
    """A fold/unfold request that cannot be applied (bad range, unknown id, wrong state)."""


class FoldOverlapError(FoldError):
    """A fold range that partially overlaps an active fold."""


class Memory(BaseModel):
    folds: dict[str, Fold] = Field(default_factory=dict)
    next_id: int = 1

    # --- queries ------------------------------------------------------------------------------
    def active(self) -> list[Fold]:
        return sorted((f for f in self.folds.values() if f.status == "active"), key=lambda f: f.start)

    def covering(self, step: int) -> Fold | None:
        for f in self.active():
            if f.start <= step <= f.end:
                return f
        return None

    def get(self, fold_id: str) -> Fold:
        key = fold_id.strip().strip("[]").upper()
        if key not in self.folds:
            known = ", ".join(self.folds) or "none yet"
            raise FoldError(f"unknown fold id {fold_id!r} (folds: {known})")
        return self.folds[key]

    def uncovered_spans(self, last_step: int) -> list[tuple[int, int]]:
        """Maximal runs of steps 1..last_step not hidden by an active fold, oldest first."""
        spans: list[tuple[int, int]] = []
        run_start: int | None = None
        for n in range(1, last_step + 1):
            if self.covering(n) is None:
                run_start = n if run_start is None else run_start
            elif run_start is not None:
                spans.append((run_start, n - 1))
                run_start = None
        if run_start is not None:
            spans.append((run_start, last_step))
        return spans

    # --- fold ---------------------------------------------------------------------------------
    def check_range(self, start: int, end: int, n_steps: int) -> list[Fold]:
        """Validate a fold range; returns the active folds it would nest. Raises FoldError."""
        if n_steps < 1:
            raise FoldError("there are no completed steps to fold yet")
        if start > end:
            raise FoldError(f"start_step {start} is after end_step {end}")
        if start < 1 or end > n_steps:
            raise FoldError(f"steps {start}-{end} are out of range: completed steps are 1-{n_steps}")
        nested: list[Fold] = []
        for f in self.active():
            if f.end < start or f.start > end:
                continue
            if start <= f.start and f.end <= end:
                nested.append(f)
                continue
            if f.contains(start, end):
                raise FoldOverlapError(
                    f"steps {start}-{end} are already folded inside {f.fold_id} (steps {f.start}-{f.end})"
                )
            lo, hi = min(start, f.start), max(end, f.end)
            raise FoldOverlapError(
                f"steps {start}-{end} partially overlap {f.fold_id} (steps {f.start}-{f.end}); fold a range "
                f"that contains {f.fold_id} entirely (e.g. {lo}-{hi}) or stays outside it"
            )
        if len(nested) == 1 and nested[0].span == (start, end):
            raise FoldOverlapError(f"steps {start}-{end} are already folded as {nested[0].fold_id}")
        return nested

    def refoldable(self, start: int, end: int) -> Fold | None:
        """An unfolded fold with exactly this range whose nested folds are active again, if any."""
        inside = {f.fold_id for f in self.active() if start <= f.start and f.end <= end}
        for f in self.folds.values():
            if f.status == "unfolded" and f.span == (start, end) and set(f.children) == inside:
                return f
        return None

    def new_id(self) -> str:
        return f"F{self.next_id}"

    @staticmethod
    def originals(fold: Fold, steps: list[Step]) -> list[Step]:
        """The fold's original steps, verbatim (the trajectory's own objects: read, never change)."""
        return steps[fold.start - 1 : fold.end]

    def add(self, fold: Fold, steps: list[Step]) -> Fold:
        """Activate `fold` (a new object, owned from here on) over its range, validated here again."""
        nested = self.check_range(fold.start, fold.end, len(steps))
        fold.fold_id = self.new_id()
        fold.status = "active"
        fold.children = [f.fold_id for f in nested]
        fold.revealed = []
        for child in nested:
            child.status = "absorbed"
            child.parent = fold.fold_id
        self.folds[fold.fold_id] = fold
        self.next_id += 1
        return fold

    def refold(self, fold: Fold, n_steps: int) -> Fold:
        self.check_range(fold.start, fold.end, n_steps)
        for cid in fold.children:
            self.folds[cid].status = "absorbed"
            self.folds[cid].parent = fold.fold_id
        fold.status = "active"
        fold.revealed = []
        return fold

    # --- unfold -------------------------------------------------------------------------------
    def unfold(
        self, fold_id: str, section: str | None = None, steps: list[Step] | None = None
    ) -> tuple[Fold, list[int]]:
        """Unfold fully (section None) or reveal the steps a section refers to. Returns the fold
        and the step numbers now shown verbatim."""
        fold = self.get(fold_id)
        if fold.status == "absorbed":
            raise FoldError(f"{fold.fold_id} is nested inside {fold.parent}; unfold {fold.parent} first")
        if fold.status == "unfolded":
            raise FoldError(f"{fold.fold_id} is already unfolded (steps {fold.start}-{fold.end} are shown)")
        if section is None or not str(section).strip():
            fold.status = "unfolded"
            fold.revealed = []
            for cid in fold.children:
                self.folds[cid].status = "active"
                self.folds[cid].parent = None
            return fold, list(range(fold.start, fold.end + 1))
        shown = self._section_steps(fold, str(section).strip(), self.originals(fold, steps or []))
        fold.revealed = sorted(set(fold.revealed) | set(shown))
        return fold, shown

    def _section_steps(self, fold: Fold, section: str, originals: list[Step]) -> list[int]:
        span = range(fold.start, fold.end + 1)
        m = re.fullmatch(r"(?:steps?\s*)?(\d+)", section, flags=re.I)
        if m:
            n = int(m.group(1))
            if n not in span:
                raise FoldError(f"step {n} is not in {fold.fold_id} (steps {fold.start}-{fold.end})")
            return [n]
        m = re.fullmatch(r"findings?\s*#?(\d+)", section, flags=re.I)
        if m:
            k = int(m.group(1))
            if not 1 <= k <= len(fold.findings):
                raise FoldError(f"{fold.fold_id} has findings 1-{len(fold.findings)}, not {k}")
            cited = set(CITATION_RE.findall(fold.findings[k - 1]))
            hits = [s.n for s in originals if cited & set(s.chunk_ids)]
            if not hits:
                raise FoldError(f"finding {k} of {fold.fold_id} cites no evidence from its steps")
            return hits
        chunk = section[2:] if section.startswith("c:") else section
        hits = [s.n for s in originals if chunk in s.chunk_ids]
        if not hits:
            raise FoldError(
                f"section {section!r} matches nothing in {fold.fold_id}; use a step number "
                f"({fold.start}-{fold.end}), 'finding N', or a chunk id 'c:...' from its evidence"
            )
        return hits
