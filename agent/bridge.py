"""Bridge resolution: a question that describes instead of naming is answered one concrete hop at a time.

"Which port authority was the first customer of the product whose production moved to Plymouth in
2019?" → the model copies it with the description replaced by #1 (one short JSON call,
`eventrag.query.bridge.split_bridge` checks the copy) → "What is the product whose production moved to
Plymouth in 2019?" is searched and read (TG-1) → "Which port authority was the first customer of TG-1?"
is the question the final reader answers. A description inside a description ("the pressure element
of the sensor that Nordhav Energy chose") is resolved first, innermost out, and a filled question that
still describes something is split again: at most `MAX_HOPS` hops.

Unlike chained reading over a model-written plan (`agent.chain`, which gave the final reader the
original question plus the hop answers and lost on HotpotQA), the final reader here gets a question
with the names filled in; when no hop resolves, the run takes the ordinary plan.
"""

from __future__ import annotations

from collections.abc import Callable

from agent.plan import ChatFn, ask_json
from agent.prompts import BRIDGE_SCHEMA, BRIDGE_SYSTEM
from eventrag.query.bridge import (
    Bridge,
    carried,
    may_describe,
    nested_bridge,
    rule_bridge,
    same_question,
    split_bridge,
)

AnswerHop = Callable[[str], "str | None"]  # search and read one concrete question: its short answer
MAX_HOPS = 3
MAX_SPLITS = 5  # model calls spent looking for descriptions in one question


def template_of(chat: ChatFn, question: str) -> str | None:
    """The model's copy of `question` with its description replaced by #1 (None when the call fails)."""
    data = ask_json(chat, BRIDGE_SYSTEM, question, BRIDGE_SCHEMA, max_tokens=120)
    return str(data["then"]) if data is not None and isinstance(data.get("then"), str) else None


class BridgeResolver:
    """Resolves the descriptions of one question; `hops` holds (concrete question, answer) in order."""

    def __init__(self, chat: ChatFn, answer_hop: AnswerHop, max_hops: int = MAX_HOPS) -> None:
        self.chat, self.answer_hop, self.max_hops = chat, answer_hop, max_hops
        self.hops: list[tuple[str, str]] = []
        self.splits = 0

    def split(self, question: str) -> Bridge | None:
        if self.splits >= MAX_SPLITS or len(self.hops) >= self.max_hops or not may_describe(question):
            return None
        self.splits += 1
        bridge = split_bridge(question, template_of(self.chat, question)) or rule_bridge(question)
        if bridge is None or same_question(bridge.inner, question):
            return None  # no description, or the whole question again
        return bridge

    def resolve(self, question: str, depth: int = 0, bridge: Bridge | None = None) -> str:
        """`question` with every description it can resolve replaced by the name found (`bridge`: its
        description already found by rule)."""
        if bridge is None:
            bridge = self.split(question) if depth <= self.max_hops else None
        if bridge is None:
            return question
        nested = nested_bridge(bridge)  # "the element of the sensor that ...": the sensor first
        if nested is not None or may_describe(bridge.description.split(" ", 1)[1]):
            inner = self.resolve(bridge.inner, depth + 1, nested)
        else:
            inner = bridge.inner
        if len(self.hops) >= self.max_hops:
            return question
        answer = carried(self.answer_hop(inner))
        if answer is None or answer.lower() in {"yes", "no"}:
            return question
        self.hops.append((inner, answer))
        return self.resolve(bridge.fill(answer), depth + 1)
