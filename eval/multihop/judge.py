"""Optional LLM-judged answer quality (RAGAS-style correctness, relevancy, similarity).

Any `ChatModel` serves as judge (an OpenAI-compatible server, or the local model). Scores are asked
for on a 1–5 scale under a strict JSON schema and reported rescaled to [0, 1]; unparseable output is
repaired, retried, and finally reported as missing (None) rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence

from eval.multihop import prompts
from eventfold.llm.json_repair import JSONRepairError, parse_json_object
from eventfold.llm.types import ChatModel, LLMError, Message

JUDGE_KEYS = ("correctness", "relevancy", "similarity")


def parse_judge_scores(parsed: object, text: str) -> dict[str, float] | None:
    """{judge_<key>: (score-1)/4} when every key holds an integer 1..5, else None."""
    obj = parsed
    if not isinstance(obj, dict):
        try:
            obj = parse_json_object(text)
        except JSONRepairError:
            return None
    out: dict[str, float] = {}
    for key in JUDGE_KEYS:
        value = obj.get(key)
        try:
            score = int(value)  # type: ignore[arg-type]
        except (TypeError, ValueError):
            return None
        if not 1 <= score <= 5:
            return None
        out[f"judge_{key}"] = (score - 1) / 4
    return out


class AnswerJudge:
    def __init__(self, chat_model: ChatModel, retries: int = 2, max_tokens: int = 64) -> None:
        self.chat_model = chat_model
        self.retries = retries
        self.max_tokens = max_tokens

    @property
    def name(self) -> str:
        return getattr(self.chat_model, "name", type(self.chat_model).__name__)

    def judge(self, question: str, answer: str, references: Sequence[str]) -> dict[str, float | None]:
        empty: dict[str, float | None] = {f"judge_{k}": None for k in JUDGE_KEYS}
        if not references:
            return empty
        messages = [
            Message(role="system", content=prompts.JUDGE_SYSTEM),
            Message(
                role="user",
                content=prompts.JUDGE_USER.format(
                    question=question, reference=references[0], answer=answer or "(empty)"
                ),
            ),
        ]
        for _ in range(self.retries + 1):
            try:
                resp = self.chat_model.chat(
                    messages, json_schema=prompts.JUDGE_SCHEMA, temperature=0.0, max_tokens=self.max_tokens
                )
            except LLMError:
                continue
            scores = parse_judge_scores(resp.parsed, resp.text)
            if scores is not None:
                return dict(scores)
        return empty
