"""One LLM client for the whole framework (see `types.ChatModel`, `factory.make_chat_model`)."""

from eventfold.llm.factory import make_chat_model
from eventfold.llm.types import ChatModel, ChatResponse, LLMError, Message, ToolCall, ToolSpec, Usage

__all__ = ["ChatModel", "ChatResponse", "LLMError", "Message", "ToolCall", "ToolSpec", "Usage", "make_chat_model"]
