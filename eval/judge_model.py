"""The judge's chat model: any OpenAI-compatible endpoint, or the configured model itself."""

from __future__ import annotations

import os

from eventfold.llm.types import ChatModel
from eventfold.settings import LLMSettings, Settings


def judge_settings(settings: Settings, url: str, model: str, api_key_env: str | None = None) -> Settings:
    """`settings` with `llm` pointed at an OpenAI-compatible judge (key read from `api_key_env`)."""
    key = os.environ.get(api_key_env) if api_key_env else None
    if api_key_env and not key:
        raise ValueError(f"judge API key variable {api_key_env} is not set")
    base = settings.llm.model_dump()
    llm = LLMSettings(**{**base, "backend": "openai", "base_url": url, "model": model, "api_key": key})
    return settings.model_copy(update={"llm": llm})


def make_judge_model(
    settings: Settings,
    *,
    url: str | None = None,
    model: str | None = None,
    api_key_env: str | None = None,
    fallback: ChatModel | None = None,
) -> ChatModel:
    """An OpenAI-compatible judge when `url` is given; else `fallback` (e.g. the writer's model, so a
    local model is loaded once) or the model `settings.llm` describes."""
    from eventfold.llm.factory import make_chat_model

    if url:
        return make_chat_model(judge_settings(settings, url, model or settings.llm.model, api_key_env))
    if fallback is not None:
        return fallback
    return make_chat_model(settings)
