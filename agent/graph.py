"""The research agent as a LangGraph StateGraph.

    START -> plan -> guard -> agent -> tools -> guard -> agent ... -> report -> END
                               \\-> finish (reader) -> report

- plan: the question is decomposed into sub-questions (`agent.plan`) kept in the state and shown in
  the status line; a first search for the whole question opens the trajectory (step 1, kind "seed");
  with auto_search each sub-question is searched too, and with chain its answer is read before the
  next one's search, which carries it (`agent.chain`). "What event led to X" is read from the dated
  evidence before X in time order (`agent.causal`); a described thing is found first (`agent.bridge`).
- guard: the budget guard. With folding on, if the rendered context exceeds the budget it folds the
  oldest unfolded span (never the newest `keep_recent_steps`), counted as a guard fold.
- agent: renders the context (pure) plus the status line, asks the model for one tool call; the
  grammar of a local model only admits valid calls (tool specs narrowed to the current choices);
  near-miss calls are repaired; a turn without a usable call is an "invalid" step the model sees.
- tools: runs the calls through the run's registry (built once per run), appends the step.
- finish: the loop stopped without a supported answer (step cap, failing calls, every sub-question
  has evidence): the reader answers from the best evidence (`agent.finish`). A temporal question
  ("which came first", "how many years after") is answered from its sides' dates when the evidence
  dates both (`agent.temporal`), right after the opening searches if they suffice.
- report: the Markdown report (agent/report.py).
Events (plan, tool calls, results, folds, context tokens) go to LangGraph's custom stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from langgraph.config import get_stream_writer
from langgraph.graph import END, START, StateGraph

from agent import prompts
from agent.bridge import BridgeResolver
from agent.briefing import answer_briefing, asks_questions, briefing_plan
from agent.causal import plan_origin
from agent.chain import answer_sub_question, chained_query
from agent.finish import answer_from_dates, answer_from_timeline, reader_answer
from agent.focus import backend_embed
from agent.guard import guard_folds
from agent.llm import ChatModel, LLMError, Message, ToolCall, ToolSpec
from agent.memory import Step, render_context
from agent.outline import outline_plan
from agent.plan import make_plan
from agent.reader import is_insufficient
from agent.report import build_report
from agent.state import AgentState, RunState
from agent.status import status_line
from agent.temporal import date_answer
from agent.tools import ExtraTool, ToolContext, ToolRegistry, ToolResult, build_registry
from agent.tools.context import counted_chat
from agent.tools.repair import normalize_call, parse_text_call
from agent.tools.search import run_search
from eventfold.run_options import RunOptions
from eventrag.query.causal import parse_causal
from eventrag.query.temporal import parse_temporal
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
    """Nodes and routing of one agent configuration (deps + options). The tool registry is built
    once; each node binds the run it works on to the tools' context."""

    def __init__(self, deps: AgentDeps, options: RunOptions):
        self.deps, self.options = deps, options
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

    def render(self, run: RunState) -> list[Message]:
        return render_context(system_prompt(self.options), run.question, run.steps, run.memory)

    def count(self, run: RunState, messages: list[Message] | None = None) -> int:
        return self.deps.model.count_message_tokens(messages or self.render(run), self.tool_specs(run))

    # --- nodes --------------------------------------------------------------------------------
    def plan(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if self.options.plan == "off" or run.steps:
            return {}

        def chat(messages: list[Message], **kwargs: Any) -> Any:
            return counted_chat(run, self.deps.model, messages, **kwargs)

        chained = self.options.chain and self.options.auto_search
        if self._briefing_plan(run) or self._origin_plan(run, chat) or self._bridge_plan(run, chat):
            return run.to_graph()
        tried = run.plan.sub_questions  # unanswered hops of the origin or bridge plan (searched: evidence)
        run.plan = make_plan(run.question, self.options.plan, chat, chain=chained)
        subs, auto = run.plan.sub_questions, self.options.auto_search
        single = [s.text for s in subs] == [run.question]  # no hops beyond the question itself
        if run.steps:  # the origin or bridge plan searched the question already: its hops tried come first
            for sq in subs:
                sq.id += len(tried)
            run.plan.sub_questions = [*tried, *subs]
            if auto and single:
                run.plan.tie(subs[0].id, run.steps[0].n, run.steps[0].chunk_ids)
        else:
            self._seed_search(run, run.question, 1 if auto and single else None)
        _emit({"type": "plan", "sub_questions": [s.text for s in run.plan.sub_questions], "by_llm": run.plan.by_llm})
        embed = backend_embed(self.deps.backend) if chained or run.plan.temporal else None
        for sq in subs if auto and not single else []:
            self._seed_search(run, chained_query(run, sq) if chained else sq.text, sq.id)
            if chained:
                answer = answer_sub_question(run, sq, self.deps.model, self.options, embed)
                _emit({"type": "sub_answer", "sub_question": sq.id, "answer": answer})
        if run.plan.temporal is not None:
            run.plan.dated = date_answer(run, embed)
            for sq in subs:
                _emit({"type": "sub_answer", "sub_question": sq.id, "answer": sq.answer})
        return run.to_graph()

    def _briefing_plan(self, run: RunState) -> bool:
        """A request listing numbered questions: they are the plan; the first is searched (`agent.briefing`).
        In long mode a structured request that is not a list of questions is planned as its requirements
        (`agent.outline`)."""
        plan = briefing_plan(run.question)
        if self.options.report_mode == "long" and not (plan is not None and asks_questions(plan)):
            plan = outline_plan(run.question) or plan
        if plan is None:
            return False
        run.plan = plan
        if self.options.auto_search:
            self._seed_search(run, plan.sub_questions[0].text, 1)
        _emit({"type": "plan", "sub_questions": [s.text for s in plan.sub_questions], "by_llm": False})
        return True

    def _origin_plan(self, run: RunState, chat: Any) -> bool:
        """"What event led to X": answered from the timeline of the evidence before X (`agent.causal`);
        False (the sub-questions tried stay, searched) when it is not one or the timeline gives no answer."""
        o, cq = self.options, parse_causal(run.question)
        if not (o.causal and o.auto_search) or o.chain or cq is None or run.steps:
            return False
        found = plan_origin(run, cq, lambda q, sq, k: self._seed_search(run, q, sq, k), chat, o, backend_embed(self.deps.backend))
        _emit({"type": "plan", "sub_questions": [s.text for s in run.plan.sub_questions], "by_llm": False})
        return found

    def _bridge_plan(self, run: RunState, chat: Any) -> bool:
        """Resolve the question's descriptions hop by hop (`agent.bridge`): True when at least one hop
        was answered (the plan is then the hops and the filled question, each searched); else the hops
        tried stay in the plan, unanswered, for the ordinary plan to follow."""
        o = self.options
        if not (o.bridge and o.auto_search and o.plan == "llm") or o.chain or run.steps:  # steps: origin plan
            return False
        if parse_temporal(run.question) is not None:
            return False
        embed = backend_embed(self.deps.backend)
        self._seed_search(run, run.question, None)

        def answer_hop(question: str) -> str | None:
            sq = run.plan.add(question)
            self._seed_search(run, question, sq.id)
            answer = answer_sub_question(run, sq, self.deps.model, o, embed, carry=False)
            _emit({"type": "sub_answer", "sub_question": sq.id, "answer": answer})
            return answer

        resolver = BridgeResolver(chat, answer_hop)
        resolved = resolver.resolve(run.question)
        if not resolver.hops:
            return False
        final = run.plan.add(resolved)
        run.plan.resolved = resolved
        run.plan.by_llm = True
        _emit({"type": "plan", "sub_questions": [s.text for s in run.plan.sub_questions], "by_llm": True})
        self._seed_search(run, resolved, final.id, top_k=o.resolved_top_k)
        return True

    def _seed_search(self, run: RunState, query: str, sq_id: int | None, top_k: int | None = None) -> None:
        """An opening search the framework runs (step kind "seed"), tied to sub-question `sq_id`."""
        call = ToolCall(id=f"seed_{run.next_step}", name="search", arguments={"query": query})
        if sq_id is not None:
            call.arguments["sub_question"] = sq_id
        try:
            out = run_search(self.ctx(run), query, sq_id, tie=sq_id is not None, top_k=top_k)
        except Exception as exc:  # a failing retriever: the model sees the error and may retry
            out = ToolResult(content=f"error: search failed: {type(exc).__name__}: {exc}", error=True)
        self._record(run, Message(role="assistant", content="", tool_calls=[call]), [(call, out)], kind="seed")

    def guard(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        if not self.options.fold:
            return {}
        changed = guard_folds(run, self.ctx(run), lambda: self.count(run), self.options, _emit)
        return run.to_graph() if changed else {}

    def stop_reason(self, run: RunState) -> str | None:
        model_steps = sum(1 for s in run.steps if s.kind != "seed")
        if len(run.steps) >= self.options.max_steps:
            return f"step cap of {self.options.max_steps} reached"
        if run.plan.dated is not None:
            return "the dates found answer the question"
        if run.plan.resolved is not None:
            return f"the described names are found: {run.plan.resolved}"
        if run.plan.origin is not None:
            return run.plan.origin.explanation
        if run.counters.error_streak >= self.options.max_refusals:
            return f"{run.counters.error_streak} failed steps in a row"
        if run.plan.complete and model_steps > 0:
            return "every sub-question has evidence"
        return None

    def agent(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        reason = self.stop_reason(run)
        if reason is not None:
            run.status, run.stop_reason = "forced", reason
            return run.to_graph()
        specs = self.tool_specs(run)
        messages = self.render(run)
        base = self.deps.model.count_message_tokens(messages, specs)
        messages.append(Message(role="user", content=status_line(run, self.options, base)))
        tokens = self.deps.model.count_message_tokens(messages, specs)
        c = run.counters
        c.context_samples.append(tokens)
        c.peak_context_tokens = max(c.peak_context_tokens, tokens)
        c.final_context_tokens = tokens
        _emit({"type": "context", "step": run.next_step, "tokens": tokens, "budget": self.options.context_budget})
        try:
            resp = counted_chat(run, self.deps.model, messages, tools=specs, tool_choice="required",
                                temperature=0.0, max_tokens=self.options.step_max_tokens)  # fmt: skip
        except LLMError as exc:
            run.status, run.stop_reason = "forced", f"LLM error: {exc}"
            return run.to_graph()
        calls = self._usable_calls(run, resp.tool_calls, resp.text, [s.name for s in specs])
        if not calls:
            c.invalid_turns += 1
            c.error_streak += 1
            error = prompts.INVALID_TURN.format(tools=", ".join(s.name for s in specs if s.available))
            run.steps.append(Step(n=run.next_step, kind="invalid",
                                  assistant=Message(role="assistant", content=resp.text.strip()[:500]),
                                  results=[Message(role="user", content=error)]))  # fmt: skip
            _emit({"type": "invalid", "step": len(run.steps), "text": resp.text[:200]})
            run.pending = []
            return run.to_graph()
        run.pending = [Message(role="assistant", content=resp.text.strip(), tool_calls=calls)]
        return run.to_graph()

    @staticmethod
    def _usable_calls(run: RunState, tool_calls: list[ToolCall], text: str, names: list[str]) -> list[ToolCall]:
        calls = []
        for call in tool_calls:
            fixed, changed = normalize_call(call, names)
            run.counters.repaired_calls += int(changed)
            calls.append(fixed)
        if not calls:
            parsed = parse_text_call(text, names)
            if parsed is not None:
                run.counters.repaired_calls += 1
                calls = [parsed]
        return calls

    def tools(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        assistant = run.pending[0]
        self.ctx(run)
        done = []
        for call in assistant.tool_calls:
            _emit({"type": "tool_call", "step": run.next_step, "name": call.name, "arguments": call.arguments})
            if call.error:  # the backend could not use the call: the model sees why, the run goes on
                out = ToolResult(content=f"error: {call.error}", error=True)
            else:
                out = self.registry.call(call.name, call.arguments)
            done.append((call, out))
            _emit({"type": "tool_result", "step": run.next_step, "name": call.name, "error": out.error,
                   "content": out.content[:300]})  # fmt: skip
            if out.final:
                run.answer = out.data["answer"]
                run.answer_citations = out.data.get("citations", [])
                run.answer_supported = bool(out.data.get("supported", True))
                run.status, run.stop_reason, run.answer_source = "answered", "answer tool", "model"
        self._record(run, assistant, done)
        run.pending = []
        return run.to_graph()

    @staticmethod
    def _record(run: RunState, assistant: Message, done: list[tuple[ToolCall, ToolResult]], kind: str = "action") -> None:
        """Append the step: its results, the evidence they showed, the counters."""
        results, chunk_ids, errors = [], [], 0
        for call, out in done:
            run.counters.tool_calls += int(kind != "seed")
            errors += int(out.error)
            for ev in out.evidence:
                run.evidence.setdefault(ev.chunk_id, ev)
                if ev.chunk_id not in chunk_ids:
                    chunk_ids.append(ev.chunk_id)
            results.append(Message(role="tool", content=out.content, tool_call_id=call.id, name=call.name))
        run.counters.tool_errors += errors
        run.counters.error_streak = run.counters.error_streak + 1 if done and errors == len(done) else 0
        run.steps.append(Step(n=run.next_step, assistant=assistant, results=results, chunk_ids=chunk_ids,
                              kind=kind))  # type: ignore[arg-type]  # fmt: skip

    def finish(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        embed = backend_embed(self.deps.backend)
        if run.plan.briefing:  # every question answered from its own evidence, searched if it has none
            answer_briefing(run, self.deps.model, self.options, embed, lambda q, sq: self._seed_search(run, q, sq))
            _emit({"type": "forced_answer", "answer": run.answer, "reason": run.stop_reason, "source": "reader"})
            return run.to_graph()
        if answer_from_timeline(run):  # an origin question: the event read from the timeline
            _emit({"type": "timeline", "answer": run.answer, "reason": run.stop_reason})
            return run.to_graph()
        if answer_from_dates(run, embed):  # a temporal question: the dates decide, not the model
            _emit({"type": "dates", "answer": run.answer, "reason": run.stop_reason})
            return run.to_graph()
        if run.status == "answered" and run.answer_supported:  # (temporal question, dates missing)
            return run.to_graph()
        if run.status == "answered":  # an answer without evidence (verify_answer): the reader decides
            run.status, run.stop_reason = "forced", "the answer cited no evidence"
        reader_answer(run, self.deps.model, self.options, embed)
        _emit({"type": "forced_answer", "answer": run.answer, "reason": run.stop_reason, "source": run.answer_source})
        return run.to_graph()

    def report(self, state: AgentState) -> dict[str, Any]:
        run = RunState.from_graph(state)
        # a briefing's sections are its report: a 1.5B's summary over a request's findings restated them
        # with invented numbers and mixed-up facts (the S2 "certified on 1 March 2016", sample corpus)
        summarize = not run.plan.briefing
        found = bool(run.answer) and not is_insufficient(run.answer or "")  # nothing found: nothing to write up
        if self.options.report_mode == "long" and found and run.evidence and summarize:
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
        if state.get("status") == "forced":
            return "finish"
        return "tools" if state.get("pending") else "guard"

    def after_tools(self, state: AgentState) -> str:
        status = state.get("status")
        if status == "answered":
            verified = state.get("answer_supported", True) or not self.options.verify_answer
            plan = state.get("plan") or {}  # the dates may overrule it; a briefing is read per question
            return "report" if verified and not plan.get("temporal") and not plan.get("briefing") else "finish"
        return "finish" if status == "forced" else "guard"


def build_graph(deps: AgentDeps, options: RunOptions, checkpointer: Any = None, nodes: AgentGraph | None = None) -> Any:
    """Compile the agent graph (a standard LangGraph CompiledStateGraph); `nodes` reuses an
    `AgentGraph` (and its tool registry) already built for these deps and options."""
    g = nodes or AgentGraph(deps, options)
    builder = StateGraph(AgentState)
    for name in ("plan", "guard", "agent", "tools", "finish", "report"):
        builder.add_node(name, getattr(g, name))
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "guard")
    builder.add_edge("guard", "agent")
    builder.add_conditional_edges("agent", g.after_agent, ["tools", "guard", "finish"])
    builder.add_conditional_edges("tools", g.after_tools, ["report", "guard", "finish"])
    builder.add_edge("finish", "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=checkpointer)
