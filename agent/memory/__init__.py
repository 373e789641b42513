"""Fold memory: numbered steps, folded blocks, the lossless store, pure rendering + token budget."""

from agent.memory.blocks import Fold, render_block
from agent.memory.render import context_tokens, render_context, render_trajectory, rendered_text
from agent.memory.store import FoldError, FoldOverlapError, Memory
from agent.memory.trajectory import CITATION_RE, Step, call_digest, step_messages, step_text

__all__ = [
    "CITATION_RE",
    "Fold",
    "FoldError",
    "FoldOverlapError",
    "Memory",
    "Step",
    "call_digest",
    "context_tokens",
    "render_block",
    "render_context",
    "render_trajectory",
    "rendered_text",
    "step_messages",
    "step_text",
]
