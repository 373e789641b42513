"""Graph factory for LangGraph Studio / `langgraph dev` (see `langgraph.json`).

Settings come from the environment (`EVENTFOLD_*`, `.env`, `EVENTFOLD_CONFIG`); the index is
`EVENTFOLD_INDEX` (build it first with `eventfold ask --corpus DIR` or `eventfold index`). The
LangGraph server supplies persistence, so the graph is compiled without a checkpointer here.
Input: `{"question": "..."}`.
"""

from __future__ import annotations

from typing import Any


def make_graph(config: Any = None) -> Any:
    from agent.graph import AgentDeps, build_graph
    from eventfold.llm.factory import make_chat_model
    from eventfold.run_options import RunOptions
    from eventfold.settings import Settings
    from eventrag.stack import open_stack

    settings = Settings()
    chat = make_chat_model(settings)
    stack = open_stack(settings, chat_model=chat)  # lives as long as the server process
    return build_graph(AgentDeps(model=chat, backend=stack.retriever), RunOptions.for_research(settings))
