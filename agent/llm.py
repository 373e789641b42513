"""The agent's view of the LLM client; it lives in `eventfold.llm` so EventRAG can share it without
importing `agent` (nothing in eventrag imports agent)."""

from eventfold.llm import ChatModel, ChatResponse, LLMError, Message, ToolCall, ToolSpec, Usage

__all__ = ["ChatModel", "ChatResponse", "LLMError", "Message", "ToolCall", "ToolSpec", "Usage"]
