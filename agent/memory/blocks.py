"""Folded blocks: the structured Markdown that replaces a range of steps in the rendered context.

Format::

    ## [F3] steps 4–9 · <title>
    ### Findings
    - fact … [c:doc12#4]
    ### Evidence
    - c:doc12#4 (doc doc12)
    ### Open questions
    - …
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

Granularity = Literal["step", "subtask"]
FoldStatus = Literal["active", "unfolded", "absorbed"]


class Fold(BaseModel):
    """A fold: its block content, its state, and the verbatim original steps it hides."""

    fold_id: str
    start: int = Field(ge=1)
    end: int = Field(ge=1)
    granularity: Granularity = "step"
    title: str = ""
    findings: list[str] = Field(default_factory=list)  # Markdown lines, citations as [c:chunk_id]
    evidence: list[str] = Field(default_factory=list)  # "c:<chunk_id> (doc <doc_id>)"
    open_questions: list[str] = Field(default_factory=list)
    step_digests: list[str] = Field(default_factory=list)  # granularity "step": one line per step
    origin: Literal["model", "guard"] = "model"
    summary_source: Literal["model", "llm", "deterministic"] = "deterministic"
    status: FoldStatus = "active"
    parent: str | None = None  # the fold that absorbed this one (nested folds)
    children: list[str] = Field(default_factory=list)  # active folds inside the range when folded
    revealed: list[int] = Field(default_factory=list)  # steps shown again by unfold(fold_id, section)
    unfolded_at: int | None = None  # the step whose unfold call restored it (the guard spares it next turn)

    @property
    def span(self) -> tuple[int, int]:
        return (self.start, self.end)

    def contains(self, start: int, end: int) -> bool:
        return self.start <= start and end <= self.end


def render_block(fold: Fold) -> str:
    """The fold's Markdown block (pure)."""
    dash = "\u2013"
    title = fold.title.strip() or "folded steps"
    lines = [f"## [{fold.fold_id}] steps {fold.start}{dash}{fold.end} \u00b7 {title}"]
    if fold.granularity == "step" and fold.step_digests:
        lines.append("### Steps")
        lines += [f"- {d}" for d in fold.step_digests]
    lines.append("### Findings")
    lines += [f"- {f}" for f in fold.findings] or ["- (none recorded)"]
    lines.append("### Evidence")
    lines += [f"- {e}" for e in fold.evidence] or ["- (none)"]
    lines.append("### Open questions")
    lines += [f"- {q}" for q in fold.open_questions] or ["- (none recorded)"]
    if fold.revealed:
        lines.append(
            f"(steps {', '.join(map(str, fold.revealed))} of {fold.fold_id} are shown in full below)"
        )
    lines.append(f"(unfold('{fold.fold_id}') restores steps {fold.start}{dash}{fold.end} verbatim)")
    return "\n".join(lines)
