"""Build the configured `ChatModel` from `Settings` (the only place that picks a backend)."""

from __future__ import annotations

from eventfold.llm.types import ChatModel
from eventfold.settings import Settings


def make_chat_model(settings: Settings, *, cache: bool | None = None) -> ChatModel:
    """The chat model `settings.llm` describes, wrapped in the SQLite cache when `llm.cache` is on.

    `cache` overrides `settings.llm.cache` (e.g. an interactive `ask` may want fresh answers).
    """
    llm = settings.llm
    model: ChatModel
    if llm.backend == "openai":
        from eventfold.llm.openai_backend import OpenAIChatModel

        model = OpenAIChatModel.from_settings(llm)
    elif llm.backend == "transformers":  # a trained student, served in its training format
        from eventfold.llm.transformers_backend import HFChatModel

        model = HFChatModel.from_settings(llm)
    else:
        from eventfold.llm.local_backend import LlamaCppChatModel
        from eventfold.models import local_model_path

        model = LlamaCppChatModel.from_settings(llm, local_model_path(settings))
    if llm.cache if cache is None else cache:
        from eventfold.llm.cache import CachedChatModel

        model = CachedChatModel(model, settings.cache_dir / "llm.sqlite", default_temperature=llm.temperature)
    return model
