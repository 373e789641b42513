"""The research agent as a LangGraph StateGraph.

    START -> guard -> agent -> tools -> guard -> agent ... -> report -> END
                        \\-> force_answer -> report   (step cap, repeated refusals)

- guard: the budget guard. With folding on, if the rendered context exceeds the budget it folds the
  oldest unfolded span (never the newest `keep_recent_steps`), counted as a guard fold.
- agent: renders the context (pure), counts its tokens with the model's tokenizer, asks the model for
  one tool call (tool_choice="required"); repairs near-miss calls; a turn without a usable call
  becomes an "invalid" step whose error the model sees next turn.
- tools: runs the calls through the registry (errors come back as tool results), appends the step.
- force_answer: the framework's end: a SHORT answer from the context when the step cap is reached.
- report: the Markdown report (agent/report.py).
Events (tool calls, results, folds, context tokens) go to LangGraph's custom stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from agent import prompts
from agent.llm import ChatModel, LLMError, Message, ToolSpec
from agent.memory import Step, render_context
from agent.options import RunOptions
from agent.report import build_report
from agent.state import AgentState, RunState
from agent.tools import ExtraTool, ToolContext, ToolResult, build_registry
from agent.tools.answer import clean_citations
from agent.tools.context import counted_chat
from agent.tools.fold import apply_fold
from agent.tools.repair import normalize_call, parse_text_call
from eventrag.schema import SearchBackend


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


class AgentGraph:
    """Nodes and routing of one agent configuration (deps + options)."""

    def __init__(self, deps: AgentDeps, options: RunOptions):
        self.deps, self.options = deps, options

    # --- helpers ------------------------------------------------------------------------------
    def ctx(self, run: RunState) -> ToolContext:
        return ToolContext(
            run=run, backend=self.deps.backend, model=self.deps.model, options=self.options, emit=_emit
        )

    def tool_specs(self, run: RunState) -> list[ToolSpec]:
        return build_registry(self.ctx(run), self.deps.extra_tools).specs()

    def render(self, run: RunState) -> list[Message]:
        return render_context(system_prompt(self.options), run.question, run.steps, run.memory)

    def count(self, run: RunState, messages: list[Message] | None = None) -> int:
        return self.deps.model.count_message_tokens(messages or self.render(run), self.tool_specs(run))

    # --- nodes --------------------------------------------------------------------------------
    def guard(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if not self.options.fold:
            return {}
        tokens = self.count(run)
        changed = False
        while tokens > self.options.context_budget:
            last = len(run.steps) - self.options.keep_recent_steps
            spans = spare_fresh_unfolds(run, run.memory.uncovered_spans(last))
            if spans:
                start, end = spans[0]
            else:
                active = [f for f in run.memory.active() if f.end <= last]
                if len(active) < 2:
                    break  # nothing left to fold: the prompt stays over budget
                start, end = active[0].start, active[1].end
            block = apply_fold(self.ctx(run), start, end, granularity="subtask", origin="guard")
            run.counters.guard_folds += 1
            changed = True
            before, tokens = tokens, self.count(run)
            _emit(
                {
                    "type": "guard_fold",
                    "fold_id": block.fold_id,
                    "start": block.start,
                    "end": block.end,
                    "tokens_before": before,
                    "tokens_after": tokens,
                }
            )
        return run.to_graph() if changed else {}

    def agent(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        c = run.counters
        if len(run.steps) >= self.options.max_steps:
            run.status, run.stop_reason = "forced", f"step cap of {self.options.max_steps} reached"
            return run.to_graph()
        if c.error_streak >= self.options.max_refusals:
            run.status, run.stop_reason = "forced", f"{c.error_streak} failed steps in a row"
            return run.to_graph()
        specs = self.tool_specs(run)
        messages = self.render(run)
        base = self.deps.model.count_message_tokens(messages, specs)
        messages.append(
            Message(
                role="user",
                content=prompts.STATUS.format(
                    step=run.next_step,
                    max_steps=self.options.max_steps,
                    tokens=base,
                    budget=self.options.context_budget,
                ),
            )
        )
        tokens = self.deps.model.count_message_tokens(messages, specs)
        c.context_samples.append(tokens)
        c.peak_context_tokens = max(c.peak_context_tokens, tokens)
        c.final_context_tokens = tokens
        _emit(
            {
                "type": "context",
                "step": run.next_step,
                "tokens": tokens,
                "budget": self.options.context_budget,
            }
        )
        try:
            resp = counted_chat(
                run,
                self.deps.model,
                messages,
                tools=specs,
                tool_choice="required",
                temperature=0.0,
                max_tokens=self.options.step_max_tokens,
            )
        except LLMError as exc:
            run.status, run.stop_reason = "failed", f"LLM error: {exc}"
            return run.to_graph()
        names = [s.name for s in specs]
        calls = []
        for call in resp.tool_calls:
            fixed, changed = normalize_call(call, names)
            c.repaired_calls += int(changed)
            calls.append(fixed)
        if not calls:
            parsed = parse_text_call(resp.text, names)
            if parsed is not None:
                c.repaired_calls += 1
                calls = [parsed]
        if not calls:
            c.invalid_turns += 1
            c.error_streak += 1
            error = prompts.INVALID_TURN.format(tools=", ".join(names))
            run.steps.append(
                Step(
                    n=run.next_step,
                    kind="invalid",
                    assistant=Message(role="assistant", content=resp.text.strip()[:500]),
                    results=[Message(role="user", content=error)],
                )
            )
            _emit({"type": "invalid", "step": len(run.steps), "text": resp.text[:200]})
            run.pending = []
            return run.to_graph()
        run.pending = [Message(role="assistant", content=resp.text.strip(), tool_calls=calls)]
        return run.to_graph()

    def tools(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        assistant = run.pending[0]
        ctx = self.ctx(run)
        registry = build_registry(ctx, self.deps.extra_tools)
        results, chunk_ids, errors = [], [], 0
        for call in assistant.tool_calls:
            run.counters.tool_calls += 1
            _emit(
                {"type": "tool_call", "step": run.next_step, "name": call.name, "arguments": call.arguments}
            )
            if call.error:  # the backend could not use the call: the model sees why, the run goes on
                out = ToolResult(content=f"error: {call.error}", error=True)
            else:
                out = registry.call(call.name, call.arguments)
            errors += int(out.error)
            for ev in out.evidence:
                run.evidence.setdefault(ev.chunk_id, ev)
                if ev.chunk_id not in chunk_ids:
                    chunk_ids.append(ev.chunk_id)
            results.append(Message(role="tool", content=out.content, tool_call_id=call.id, name=call.name))
            _emit(
                {
                    "type": "tool_result",
                    "step": run.next_step,
                    "name": call.name,
                    "error": out.error,
                    "content": out.content[:300],
                }
            )
            if out.final:
                run.answer = out.data["answer"]
                run.answer_citations = out.data.get("citations", [])
                run.status, run.stop_reason = "answered", "answer tool"
        run.counters.tool_errors += errors
        run.counters.error_streak = run.counters.error_streak + 1 if errors == len(results) else 0
        run.steps.append(Step(n=run.next_step, assistant=assistant, results=results, chunk_ids=chunk_ids))
        run.pending = []
        return run.to_graph()

    def force_answer(self, state: AgentState) -> dict[str, Any]:
        """The framework's end: first ask for an `answer` call with the same prompt prefix and tools
        (a local model reuses its KV cache), else a plain SHORT text answer."""
        run = RunState.from_graph(state)
        specs = self.tool_specs(run)
        answer, cites = "", []
        rendered = self.render(run)
        try:
            resp = counted_chat(
                run,
                self.deps.model,
                [*rendered, Message(role="user", content=prompts.FORCE_ANSWER_TOOL.format(question=run.question))],
                tools=specs,
                tool_choice="required",
                temperature=0.0,
                max_tokens=self.options.step_max_tokens,
            )
            calls = [normalize_call(c, [s.name for s in specs])[0] for c in resp.tool_calls]
            call = next((c for c in calls if c.name == "answer" and not c.error), None)
            if call is not None:
                answer = short_answer(str(call.arguments.get("answer", "")))
                raw = call.arguments.get("citations") or []
                cites = [
                    c for c in clean_citations(raw if isinstance(raw, list) else [raw]) if c in run.evidence
                ]
            if not answer:
                resp = counted_chat(
                    run,
                    self.deps.model,
                    [*rendered, Message(role="user", content=prompts.FORCE_ANSWER.format(question=run.question))],
                    temperature=0.0,
                    max_tokens=self.options.answer_max_tokens,
                )
                answer = short_answer(resp.text)
        except LLMError as exc:
            run.stop_reason = f"{run.stop_reason}; LLM error: {exc}"
        run.steps.append(
            Step(n=run.next_step, kind="forced", assistant=Message(role="assistant", content=answer))
        )
        run.answer, run.answer_citations = answer or "unknown", cites
        _emit({"type": "forced_answer", "answer": run.answer, "reason": run.stop_reason})
        return run.to_graph()

    def report(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if self.options.report_mode == "long" and run.answer and run.evidence:
            from agent.report_writer import write_long_report

            run.report_body = write_long_report(run, self.deps.model, self.options)
        run.counters.final_context_tokens = self.count(run)
        run.counters.peak_context_tokens = max(
            run.counters.peak_context_tokens, run.counters.final_context_tokens
        )
        run.report = build_report(run, self.deps.model.name)
        _emit({"type": "report", "status": run.status})
        return run.to_graph()

    # --- routing ------------------------------------------------------------------------------
    @staticmethod
    def after_agent(state: AgentState) -> str:
        if state.get("status") == "forced":
            return "force_answer"
        if state.get("status") == "failed":
            return "report"
        return "tools" if state.get("pending") else "guard"

    @staticmethod
    def after_tools(state: AgentState) -> str:
        return "report" if state.get("status") == "answered" else "guard"


def spare_fresh_unfolds(run: RunState, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Cut out of the guard's candidate spans the steps the model unfolded in its latest step, so it
    gets to read them before the guard may fold them again (partial reveals are never guard-folded
    either: they sit inside an active fold)."""
    fresh = [
        f for f in run.memory.folds.values() if f.status == "unfolded" and f.unfolded_at == len(run.steps)
    ]
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for f in sorted(fresh, key=lambda f: f.start):
            if f.end < start or f.start > end:
                continue
            if start < f.start:
                out.append((start, f.start - 1))
            start = f.end + 1
        if start <= end:
            out.append((start, end))
    return out


def short_answer(text: str) -> str:
    """First non-empty line of a reply, without 'Answer:' prefixes and trailing period."""
    for line in text.strip().splitlines():
        line = line.strip().strip("*").strip()
        for prefix in ("final answer:", "answer:", "a:"):
            if line.lower().startswith(prefix):
                line = line[len(prefix) :].strip()
        if line:
            return line.rstrip(".").strip()[:300]
    return ""


def build_graph(deps: AgentDeps, options: RunOptions, checkpointer: Any = None) -> Any:
    """Compile the agent graph (a standard LangGraph CompiledStateGraph)."""
    g = AgentGraph(deps, options)
    builder = StateGraph(AgentState)
    builder.add_node("guard", g.guard)
    builder.add_node("agent", g.agent)
    builder.add_node("tools", g.tools)
    builder.add_node("force_answer", g.force_answer)
    builder.add_node("report", g.report)
    builder.add_edge(START, "guard")
    builder.add_edge("guard", "agent")
    builder.add_conditional_edges("agent", g.after_agent, ["tools", "guard", "force_answer", "report"])
    builder.add_conditional_edges("tools", g.after_tools, ["report", "guard"])
    builder.add_edge("force_answer", "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=checkpointer)
