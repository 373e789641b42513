"""Policies: what picks the next tool call of the agent loop (`agent.graph`).

- `model.ModelPolicy`: the LLM picks every call (the default);
- `workflow.WorkflowPolicy`: a scripted baseline and SFT teacher that maps question forms to the same
  tool calls, in the same trajectory format.
"""

from agent.policy.base import Policy, PolicyContext, Turn
from agent.policy.model import ModelPolicy
from agent.policy.workflow import WorkflowPolicy, call_text

__all__ = ["ModelPolicy", "Policy", "PolicyContext", "Turn", "WorkflowPolicy", "call_text", "make_policy"]


def make_policy(name: str) -> Policy:
    """The policy named by `RunOptions.policy`."""
    if name == "workflow":
        return WorkflowPolicy()
    if name == "model":
        return ModelPolicy()
    raise ValueError(f"unknown policy {name!r}; choose model or workflow")
