"""Pure rendering of the context the model sees: system prompt, question, then the trajectory with
active folds replaced by their blocks (plus any steps a partial unfold revealed), and token budget
accounting with the model's own tokenizer."""

from __future__ import annotations

from agent.llm import ChatModel, Message, ToolSpec
from agent.memory.blocks import render_block
from agent.memory.store import Memory
from agent.memory.trajectory import Step, step_messages


def render_trajectory(steps: list[Step], memory: Memory) -> list[Message]:
    """The trajectory part of the context (pure: same inputs, same messages)."""
    out: list[Message] = []
    for step in steps:
        fold = memory.covering(step.n)
        if fold is None:
            out.extend(step_messages(step))
            continue
        if step.n == fold.start:
            out.append(Message(role="user", content=render_block(fold)))
            for original in memory.originals(fold, steps):
                if original.n in fold.revealed:
                    out.extend(step_messages(original))
    return out


def render_context(system_prompt: str, question: str, steps: list[Step], memory: Memory) -> list[Message]:
    """The whole prompt: system, the question, the rendered trajectory."""
    return [
        Message(role="system", content=system_prompt),
        Message(role="user", content=question),
        *render_trajectory(steps, memory),
    ]


def rendered_text(messages: list[Message]) -> str:
    """A canonical byte string of a rendered context (for comparisons and hashing)."""
    return "\n".join(m.model_dump_json() for m in messages)


def context_tokens(model: ChatModel, messages: list[Message], tools: list[ToolSpec] | None = None) -> int:
    """Tokens of the prompt as the model sees it (its tokenizer and chat template)."""
    return model.count_message_tokens(messages, tools)
