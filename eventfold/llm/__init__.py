"""One LLM client for the whole framework (see `types.ChatModel`)."""

from eventfold.llm.types import ChatModel, ChatResponse, LLMError, Message, ToolCall, ToolSpec, Usage

__all__ = ["ChatModel", "ChatResponse", "LLMError", "Message", "ToolCall", "ToolSpec", "Usage"]
