"""The research agent as a LangGraph StateGraph: a ReAct loop in which a policy picks every call.

    START -> agent -> tools -> guard -> agent ... -> report -> END

- agent: renders the context (pure) plus the status line (facts: step, tokens of budget, a long task's
  items, fold targets, queries, chunks seen, and for the model policy the workflow policy's suggested
  next call) and asks the policy (`agent.policy`: `RunOptions.policy`) for one turn. The tools on offer
  are narrowed to the values valid now; at the last step only `answer` is offered. A turn without a
  usable call is an "invalid" step answered with the valid tools, and the run goes on.
- tools: runs the calls through the run's registry (built once per run) and appends the step with its
  results, their data, the evidence they showed, whether the policy followed the suggestion, the status
  line's tokens and (shown or, with `trace_workflow`, not) the workflow policy's call at that turn.
- guard: the budget guard. With folding on, if the rendered context exceeds the budget it folds the
  oldest unfolded span (never the newest `keep_recent_steps`), counted as a guard fold.
- report: the Markdown report (`agent.report`).
The run ends on the policy's `answer` (in a long task: once every item has one) or at the step cap.
No call runs before the policy asks for it, and nothing rewrites the policy's answer.
Events (tool calls, results, folds, context tokens) go to LangGraph's custom stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from agent import prompts
from agent.briefing import asks_questions, briefing_plan
from agent.guard import guard_folds
from agent.llm import ChatModel, LLMError, Message, ToolCall, ToolSpec
from agent.memory import Step, render_context
from agent.outline import outline_plan
from agent.policy import Policy, PolicyContext, Turn, WorkflowPolicy, call_text, make_policy
from agent.report import build_report
from agent.state import AgentState, RunState
from agent.status import status_line
from agent.tools import ExtraTool, ToolContext, ToolRegistry, ToolResult, build_registry
from eventfold.run_options import RunOptions
from eventrag.schema import SearchBackend

ITEM_STEPS = 3  # a long task's step cap per item: a search or a capability call, a read, its answer


@dataclass
class AgentDeps:
    model: ChatModel
    backend: SearchBackend
    extra_tools: Sequence[ExtraTool] = field(default_factory=tuple)


def _emit(event: dict[str, Any]) -> None:
    try:
        get_stream_writer()(event)
    except RuntimeError:  # called outside a graph run
        pass


def system_prompt(options: RunOptions) -> str:
    return prompts.SYSTEM_FOLD.format(budget=options.context_budget) if options.fold else prompts.SYSTEM_REACT


def task_items(question: str, options: RunOptions) -> Any:
    """The items of a long task (a briefing's numbered questions; in long mode a structured request's
    requirements), None for a single question."""
    plan = briefing_plan(question)
    if options.report_mode == "long" and not (plan is not None and asks_questions(plan)):
        plan = outline_plan(question) or plan
    return plan


class AgentGraph:
    """Nodes and routing of one agent configuration (deps + options + policy). The tool registry is
    built once; each node binds the run it works on to the tools' context."""

    def __init__(self, deps: AgentDeps, options: RunOptions, policy: Policy | None = None):
        self.deps, self.options = deps, options
        self.policy = policy or make_policy(options.policy)
        self.workflow = self.policy if isinstance(self.policy, WorkflowPolicy) else WorkflowPolicy()
        self._ctx = ToolContext(
            run=RunState(question="(none yet)"), backend=deps.backend, model=deps.model, options=options, emit=_emit
        )
        self.registry: ToolRegistry = build_registry(self._ctx, deps.extra_tools)

    # --- helpers ------------------------------------------------------------------------------
    def ctx(self, run: RunState) -> ToolContext:
        self._ctx.run = run
        return self._ctx

    def tool_specs(self, run: RunState) -> list[ToolSpec]:
        self.ctx(run)
        return self.registry.specs()

    def offered(self, run: RunState) -> list[ToolSpec]:
        """The specs of this turn: all tools; at the last step every tool but `answer` is marked
        unavailable and `answer` available (the grammar admits `answer` alone while the prompt's tool
        list, and so the cached prefix, stays the same)."""
        specs = self.tool_specs(run)
        if not self.last_step(run):
            return specs
        return [s.model_copy(update={"available": s.name == "answer"}) for s in specs]

    def cap(self, run: RunState) -> int:
        """The step cap: `max_steps`, raised for a long task to `ITEM_STEPS` per item (each item needs
        its own calls and answer)."""
        return max(self.options.max_steps, ITEM_STEPS * len(run.plan.sub_questions))

    def last_step(self, run: RunState) -> bool:
        return run.next_step >= self.cap(run)

    def render(self, run: RunState) -> list[Message]:
        return render_context(system_prompt(self.options), run.question, run.steps, run.memory)

    def count(self, run: RunState, messages: list[Message] | None = None) -> int:
        return self.deps.model.count_message_tokens(messages or self.render(run), self.tool_specs(run))

    def begin(self, state: AgentState) -> dict[str, Any]:
        """The state with a long task's items set (`set_items`), {} when nothing changes."""
        run = RunState.from_graph(state)
        return run.to_graph() if self.set_items(run) else {}

    def set_items(self, run: RunState) -> bool:
        """A long task's items, set once before the first turn (no search: the request lists them)."""
        if run.steps or run.plan.sub_questions:
            return False
        plan = task_items(run.question, self.options)
        if plan is None:
            return False
        run.plan = plan
        _emit({"type": "items", "items": [s.text for s in plan.sub_questions]})
        return True

    def suggestion(self, run: RunState) -> str | None:
        """The workflow policy's next call as text, shown to the model policy (None when not shown)."""
        if self.policy is self.workflow or not self.options.suggest or self.last_step(run):
            return None
        # the script the workflow policy itself follows: a bridge only the model's split finds ("the
        # waterfall in the country where …") starts with resolve, where the rules alone suggest a search
        return call_text(self.workflow.suggest(run, PolicyContext(self.deps.model, self.options, self.ctx(run))))

    def workflow_call(self, run: RunState, suggestion: str | None) -> str | None:
        """The workflow policy's next call for the step's record: the suggestion when one is shown, else
        computed only with `trace_workflow` (at the last step: answer, the one call on offer)."""
        if suggestion or not self.options.trace_workflow:
            return suggestion
        return "answer" if self.last_step(run) else call_text(self.workflow.suggest(run))

    def prompt(self, run: RunState, specs: list[ToolSpec], suggestion: str | None) -> list[Message]:
        """The rendered context plus the status line; its tokens are the run's context samples."""
        messages = self.render(run)
        base = self.deps.model.count_message_tokens(messages, specs)
        status = status_line(run, self.options, base, suggestion, max_steps=self.cap(run))
        run.status_tokens = base
        messages.append(Message(role="user", content=status))
        tokens = self.deps.model.count_message_tokens(messages, specs)
        c = run.counters
        c.context_samples.append(tokens)
        c.peak_context_tokens = max(c.peak_context_tokens, tokens)
        c.final_context_tokens = tokens
        _emit({"type": "context", "step": run.next_step, "tokens": tokens, "budget": self.options.context_budget})
        return messages

    # --- nodes --------------------------------------------------------------------------------
    def agent(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        self.set_items(run)
        run.policy = self.policy.name
        specs = self.offered(run)
        suggestion = self.suggestion(run)
        run.workflow_call = self.workflow_call(run, suggestion)
        messages = self.prompt(run, specs, suggestion)
        try:
            turn = self.policy.next_call(run, specs, PolicyContext(self.deps.model, self.options, self.ctx(run), messages))
        except LLMError as exc:
            run.status, run.stop_reason = "failed", f"LLM error: {exc}"
            return run.to_graph()
        if turn.invalid:
            self._invalid(run, turn, specs, suggestion)
            return run.to_graph()
        run.pending = [Message(role="assistant", content=turn.text, tool_calls=turn.calls)]
        run.suggestion = suggestion
        return run.to_graph()

    def _invalid(self, run: RunState, turn: Turn, specs: list[ToolSpec], suggestion: str | None) -> None:
        run.counters.invalid_turns += 1
        error = prompts.INVALID_TURN.format(tools=", ".join(s.name for s in specs if s.available))
        run.steps.append(Step(n=run.next_step, kind="invalid", assistant=Message(role="assistant", content=turn.text[:500]),
                              results=[Message(role="user", content=error)], suggested=suggestion,
                              followed=False if suggestion else None, workflow_call=run.workflow_call,
                              status_tokens=run.status_tokens))  # fmt: skip
        self._count_suggestion(run, suggestion, followed=False)
        _emit({"type": "invalid", "step": len(run.steps), "text": turn.text[:200]})
        run.pending, run.workflow_call, run.status_tokens = [], None, None
        self._check_cap(run)

    def tools(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        assistant = run.pending[0]
        last = self.last_step(run)
        self.ctx(run).last_turn = last
        done = []
        for call in assistant.tool_calls:
            _emit({"type": "tool_call", "step": run.next_step, "name": call.name, "arguments": call.arguments})
            out = self._run_call(call, last)
            done.append((call, out))
            _emit({"type": "tool_result", "step": run.next_step, "name": call.name, "error": out.error,
                   "content": out.content[:300]})  # fmt: skip
            if out.final:
                self._answered(run, out)
        self._record(run, assistant, done, run.suggestion)
        run.pending, run.suggestion, run.workflow_call, run.status_tokens = [], None, None, None
        self._check_cap(run)
        return run.to_graph()

    def _run_call(self, call: ToolCall, last: bool) -> ToolResult:
        if call.error:  # the backend could not use the call: the policy sees why, the run goes on
            return ToolResult(content=f"error: {call.error}", error=True)
        if last and call.name != "answer":
            return ToolResult(content=f"error: {call.name} is not offered at the last step; only answer is", error=True)
        return self.registry.call(call.name, call.arguments)

    def _answered(self, run: RunState, out: ToolResult) -> None:
        """The run's answer: the policy's own text (in a long task, how many items it answered)."""
        run.status, run.stop_reason, run.answer_source = "answered", "answer", self.policy.name
        items = run.plan.sub_questions
        if not items:
            run.answer, run.answer_citations = out.data["answer"], list(out.data.get("citations", []))
            return
        answered = [sq for sq in items if sq.answer is not None]
        run.answer = f"{len(answered)} of {len(items)} items answered (one section each)"
        run.answer_citations = list(dict.fromkeys(c for sq in answered for c in sq.citations))

    def _check_cap(self, run: RunState) -> None:
        if run.status == "running" and len(run.steps) >= self.cap(run):
            run.status, run.stop_reason = "forced", f"step cap of {self.cap(run)} reached"
            if run.plan.sub_questions:  # the items answered so far stand; the rest are reported open
                answered = [sq for sq in run.plan.sub_questions if sq.answer is not None]
                run.answer = f"{len(answered)} of {len(run.plan.sub_questions)} items answered (one section each)"
                run.answer_citations = list(dict.fromkeys(c for sq in answered for c in sq.citations))
                run.answer_source = self.policy.name if answered else ""

    def _record(self, run: RunState, assistant: Message, done: list[tuple[ToolCall, ToolResult]],
                suggestion: str | None) -> None:  # fmt: skip
        """Append the step: its results and their data, the evidence they showed, the counters."""
        results, chunk_ids, data = [], [], []
        for call, out in done:
            run.counters.tool_calls += 1
            run.counters.tool_errors += int(out.error)
            for ev in out.evidence:
                run.evidence.setdefault(ev.chunk_id, ev)
                if ev.chunk_id not in chunk_ids:
                    chunk_ids.append(ev.chunk_id)
            results.append(Message(role="tool", content=out.content, tool_call_id=call.id, name=call.name))
            data.append(out.data)
        names = [c.name for c, _ in done]
        followed = bool(suggestion) and bool(names) and names[0] == suggestion.split("(")[0]  # type: ignore[union-attr]
        run.steps.append(Step(n=run.next_step, assistant=assistant, results=results, chunk_ids=chunk_ids, data=data,
                              suggested=suggestion, followed=followed if suggestion else None,
                              workflow_call=run.workflow_call, status_tokens=run.status_tokens))  # fmt: skip
        self._count_suggestion(run, suggestion, followed)
        run.counters.distinct_tools = len({c.name for s in run.steps if s.kind == "action" for c in s.assistant.tool_calls})

    @staticmethod
    def _count_suggestion(run: RunState, suggestion: str | None, followed: bool) -> None:
        if suggestion:
            run.counters.suggestions_shown += 1
            run.counters.suggestions_followed += int(followed)

    def guard(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if not self.options.fold:
            return {}
        changed = guard_folds(run, self.ctx(run), lambda: self.count(run), self.options, _emit)
        return run.to_graph() if changed else {}

    def report(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if self.options.report_mode == "long" and run.answer and run.evidence and not run.plan.sub_questions:
            from agent.report_writer import write_long_report

            run.report_body = write_long_report(run, self.deps.model, self.options)
        run.counters.final_context_tokens = self.count(run)
        run.counters.peak_context_tokens = max(run.counters.peak_context_tokens, run.counters.final_context_tokens)
        run.report = build_report(run, self.deps.model.name, mode=self.options.report_mode)
        _emit({"type": "report", "status": run.status})
        return run.to_graph()

    # --- routing ------------------------------------------------------------------------------
    @staticmethod
    def after_agent(state: AgentState) -> str:
        if state.get("status") != "running":
            return "report"
        return "tools" if state.get("pending") else "guard"

    @staticmethod
    def after_tools(state: AgentState) -> str:
        return "guard" if state.get("status") == "running" else "report"


def build_graph(deps: AgentDeps, options: RunOptions, checkpointer: Any = None, nodes: AgentGraph | None = None) -> Any:
    """Compile the agent graph (a standard LangGraph CompiledStateGraph); `nodes` reuses an
    `AgentGraph` (and its tool registry) already built for these deps and options."""
    g = nodes or AgentGraph(deps, options)
    builder = StateGraph(AgentState)
    for name in ("agent", "tools", "guard", "report"):
        builder.add_node(name, getattr(g, name))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", g.after_agent, ["tools", "guard", "report"])
    builder.add_conditional_edges("tools", g.after_tools, ["guard", "report"])
    builder.add_edge("guard", "agent")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=checkpointer)
