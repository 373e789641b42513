"""`make_chat_model` picks the backend and the cache from the settings."""

from __future__ import annotations

import pytest

from eventfold.llm.cache import CachedChatModel
from eventfold.llm.factory import make_chat_model
from eventfold.llm.openai_backend import OpenAIChatModel
from eventfold.llm.types import ChatModel, Message
from eventfold.models import ModelNotFoundError
from eventfold.settings import Settings


def test_openai_backend_with_cache(fake_openai, tmp_path):
    settings = Settings(home=tmp_path, llm={"backend": "openai", "base_url": fake_openai.base_url, "model": "m",
                                            "concurrency": 3, "max_retries": 0})
    model = make_chat_model(settings)
    assert isinstance(model, CachedChatModel) and isinstance(model.inner, OpenAIChatModel)
    assert isinstance(model, ChatModel) and model.name == "m"
    assert model.path == tmp_path / "cache" / "llm.sqlite"
    fake_openai.script = [fake_openai.completion("hi")]
    assert model.chat([Message(role="user", content="x")]).text == "hi"
    assert fake_openai.requests[0]["model"] == "m"


def test_cache_can_be_switched_off(fake_openai, tmp_path):
    settings = Settings(home=tmp_path, llm={"backend": "openai", "base_url": fake_openai.base_url, "cache": False})
    assert isinstance(make_chat_model(settings), OpenAIChatModel)
    assert isinstance(make_chat_model(settings.model_copy(update={"llm": settings.llm.model_copy(update={"cache": True})}), cache=False), OpenAIChatModel)


def test_local_backend_without_a_pulled_model_says_how_to_get_one(tmp_path):
    with pytest.raises(ModelNotFoundError, match="eventfold model pull qwen2.5-coder-1.5b"):
        make_chat_model(Settings(home=tmp_path))
