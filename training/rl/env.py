"""The research environment for RL: the real agent tools over an indexed corpus, one episode per rollout.

It plugs into TRL's ``GRPOTrainer(environment_factory=...)``: TRL creates one instance per rollout,
calls ``reset(**row)`` with the dataset row (``question``, ``answer``, optional ``answer_aliases``),
and exposes the class's public methods as tools. Those methods are not written here: they are
generated from the agent's tool registry (``agent.tools.build_registry`` via
``AgentGraph.tool_specs``), one per registered tool, with the registry's parameters, defaults and
descriptions (``install_registry_tools``), and ``training.rl.run`` makes TRL render the registry's
JSON specs themselves, in the registry's order — one tool schema for inference, SFT and RL
(``tests/training/test_tool_schema.py``). Each call is executed by the agent's own ``tools`` node
(``agent.graph.AgentGraph.tools``: the same registry, fold/unfold memory, evidence and counters as an
inference run), so the trained policy acts on exactly the tools it will use at inference.

Context accounting: after every step the environment renders the context the agent would see at its
next turn (active folds replaced by their blocks, ``agent.memory.render_context``) and counts it with
the policy's tokenizer and chat template; the episode's peak is charged by the reward beyond the
budget (``training.rl.rewards``). Limitation, stated plainly: TRL's tool loop trains on one
append-only token sequence per rollout, so within a rollout the model keeps seeing the verbatim
steps; folds shrink the *rendered* context (what is charged, and what the agent sees at inference),
not the training sequence. Tool-result tokens are masked from the loss by TRL (``tool_mask``).

``research_reward`` is the reward function to pass to the trainer: it reads each rollout's
environment, returns the episode reward and logs accuracy, F1, folds/unfolds per episode, the shares of
episodes that folded / unfolded (``episode/fold_rate``, ``episode/unfold_rate``), the valid-call rate of
the policy's turns (``episode/valid_call_rate``), peak context tokens and the answered share
(``log_metric``).
"""

from __future__ import annotations

import inspect
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agent.graph import AgentDeps, AgentGraph
from agent.llm import ChatModel, Message, ToolCall, ToolSpec
from agent.state import RunState
from agent.status import status_line
from eventfold.run_options import RunOptions, run_options_with
from eventrag.schema import SearchBackend
from training.rl.opener import EPISODE_OVER
from training.rl.rewards import (
    EpisodeOutcome,
    RewardBreakdown,
    RewardConfig,
    episode_metrics,
    episode_reward,
    outcome_of,
)
from training.sft.data import valid_turns

# the research environment's own run defaults (short episodes, short results); keys a config leaves out
RLRunOptions = run_options_with(
    context_budget=2048, max_steps=8, search_top_k=3, result_chars=300, read_chars=800, fold_summary="deterministic"
)


class EnvConfig(BaseModel):
    """The research environment: the agent's run config (`RunOptions`, TOML ``[env.run]``) plus what
    only training has. ``run.context_budget`` is the rendered-context budget the status line shows."""

    model_config = ConfigDict(extra="forbid")

    run: RLRunOptions = Field(default_factory=dict, validate_default=True)  # type: ignore[valid-type]
    guard: bool = Field(False, description="run the agent's budget guard (safety-net folds) after each step")
    reward: RewardConfig = Field(default_factory=RewardConfig)


class EnvError(RuntimeError):
    """The environment was used out of order (a tool before reset) or given a bad row."""


def golds_of(row: dict[str, Any]) -> list[str]:
    answer = row.get("answer")
    golds = [answer] if isinstance(answer, str) else list(answer or [])
    golds += [a for a in row.get("answer_aliases") or [] if isinstance(a, str)]
    return [g for g in dict.fromkeys(golds) if g.strip()]


def _run_options(config: EnvConfig) -> RunOptions:
    """The environment always offers fold/unfold, and no LLM runs inside a rollout: the policy may
    write its own fold summary, else the summary is deterministic."""
    return config.run.model_copy(update={"fold": True, "fold_summary": "deterministic"})


class ResearchEnv:
    """One rollout's episode. Public methods (besides reset) are the agent's tools, generated from the
    registry when this module is imported."""

    _registry_tools: list[str] = []

    def __init__(self, backend: SearchBackend, counter: ChatModel, config: EnvConfig | None = None) -> None:
        self._config = config or EnvConfig()
        self._options = _run_options(self._config)
        self._graph = AgentGraph(AgentDeps(model=counter, backend=backend), self._options)
        self._run: RunState | None = None
        self._golds: list[str] = []
        self._episodes = 0
        self._refused = 0  # calls this episode refused after its end or at the step cap
        missing = [s.name for s in self._tool_specs() if s.name not in type(self)._registry_tools]
        if missing:  # the registry grew tools for these options: give the class their methods too
            install_registry_tools(type(self), self._tool_specs())

    # --- TRL protocol ---------------------------------------------------------------------------
    def reset(self, **row: Any) -> str | None:
        question = " ".join(str(row.get("question") or "").split())
        if not question:
            raise EnvError(f"dataset row has no 'question' (keys: {sorted(row)})")
        self._episodes += 1
        run = RunState(run_id=f"rl-{id(self):x}-{self._episodes}", question=question)
        # the agent's own opening: a long task's items (no call runs before the policy's first turn)
        update = self._graph.begin(run.to_graph())
        self._run = RunState.from_graph(update) if update else run
        self._golds = golds_of(row)
        self._refused = 0
        self._sample_context()
        return self._opening()

    def _opening(self) -> str:
        """The steps before the policy's first turn (none: the loop runs no call the policy did not
        choose), then the status line: appended by TRL to the prompt's last message."""
        run = self.run_state
        parts = [f"\n\n[step {s.n}] {s.kind} search:\n" + "\n".join(m.content for m in s.results) for s in run.steps]
        return "".join(parts) + "\n\n" + self._status()

    # --- tools: public methods generated from the agent's registry (``install_registry_tools``) ----
    def _tool_specs(self) -> list[ToolSpec]:
        """The tool specs of this episode exactly as the agent offers them at inference."""
        run = self._run or RunState(run_id="rl-schema", question="schema")
        return self._graph.tool_specs(run)

    # --- internals ------------------------------------------------------------------------------
    def _step(self, name: str, arguments: dict[str, Any]) -> str:
        run = self._run
        if run is None:
            raise EnvError("call reset() before using a tool")
        if run.status != "running":
            run.counters.tool_errors += 1
            self._refused += 1
            why = "an answer was given" if run.status == "answered" else run.stop_reason
            return f"error: the episode has ended ({why}); do not call more tools\n{EPISODE_OVER}"
        if len(run.steps) >= self._options.max_steps:
            run.counters.tool_errors += 1
            self._refused += 1
            run.status, run.stop_reason = "forced", f"step cap of {self._options.max_steps} reached"
            return f"error: step cap of {self._options.max_steps} reached\n{EPISODE_OVER}"
        args = {k: v for k, v in arguments.items() if v is not None}
        call = ToolCall(id=f"call_{run.next_step}", name=name, arguments=args)
        run.pending = [Message(role="assistant", content="", tool_calls=[call])]
        run = RunState.from_graph(self._graph.tools(run.to_graph()))
        if self._config.guard and run.status == "running":
            update = self._graph.guard(run.to_graph())
            run = RunState.from_graph(update) if update else run
        self._run = run
        self._sample_context()
        if run.status != "running":  # answered: the next turn is free (no call), so TRL's loop ends
            return f"{run.steps[-1].results[0].content}\n{EPISODE_OVER}"
        return f"{run.steps[-1].results[0].content}\n{self._status()}"

    def _status(self) -> str:
        """The agent's status line (step, context vs budget, plan, fold targets, searches), as the
        agent shows it before each turn at inference (``agent.status.status_line``)."""
        run = self.run_state
        return status_line(run, self._options, run.counters.final_context_tokens)

    def _sample_context(self) -> None:
        assert self._run is not None
        tokens = self._graph.count(self._run)
        c = self._run.counters
        c.context_samples.append(tokens)
        c.peak_context_tokens = max(c.peak_context_tokens, tokens)
        c.final_context_tokens = tokens

    # --- results (underscore: not tools) --------------------------------------------------------
    @property
    def run_state(self) -> RunState:
        if self._run is None:
            raise EnvError("no episode yet: call reset()")
        return self._run

    def _outcome(self) -> EpisodeOutcome:
        return outcome_of(self.run_state, self._golds)

    def _reward(self) -> RewardBreakdown:
        return episode_reward(self._outcome(), self._config.reward)

    def _turns(self) -> tuple[int, int]:
        """(policy turns, turns whose call ran without error): the agent's count of an inference run
        (``training.sft.data.valid_turns``), plus the calls refused after the episode's end or at the step
        cap, plus the last turn when the episode is still running (TRL's loop ended on a turn without a
        call: no call, an unparsable one, or the completion budget ran out)."""
        run = self.run_state
        turns, valid = valid_turns(run)
        return turns + self._refused + (run.status == "running"), valid


# --- tool methods from the registry ----------------------------------------------------------------

_JSON_TYPES: dict[str, Any] = {"string": str, "integer": int, "number": float, "boolean": bool, "object": dict}


def _annotation(schema: dict[str, Any]) -> Any:
    """A Python type for a JSON-schema property (what TRL/transformers need to call and describe it)."""
    if schema.get("enum"):
        return Literal[tuple(schema["enum"])]  # type: ignore[misc]
    kind = schema.get("type")
    if kind == "array":
        return list[_annotation(schema.get("items") or {})]  # type: ignore[misc]
    if isinstance(kind, list):
        kinds = [k for k in kind if k != "null"]
        kind = kinds[0] if kinds else None
    return _JSON_TYPES.get(kind or "", str)


def _tool_method(spec: ToolSpec) -> Any:
    """A method ``name(self, **arguments)`` that runs the registry's tool through the agent's tools node,
    with the spec's signature and a Google-style docstring built from the spec's descriptions."""
    props: dict[str, Any] = dict(spec.parameters.get("properties") or {})
    required = set(spec.parameters.get("required") or [])
    params = [inspect.Parameter("self", inspect.Parameter.POSITIONAL_OR_KEYWORD)]
    annotations: dict[str, Any] = {"return": str}
    for pname in sorted(props, key=lambda n: n not in required):  # required first (Python needs it)
        ann = _annotation(props[pname])
        if pname not in required:
            ann = ann | None
        annotations[pname] = ann
        default = inspect.Parameter.empty if pname in required else props[pname].get("default")
        params.append(inspect.Parameter(pname, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    name = spec.name

    def tool(self: ResearchEnv, **arguments: Any) -> str:
        return self._step(name, arguments)

    args_doc = "".join(f"\n    {p}: {(props[p].get('description') or p)}" for p in props)
    tool.__name__ = tool.__qualname__ = name
    tool.__doc__ = spec.description + (f"\n\nArgs:{args_doc}" if props else "")
    tool.__signature__ = inspect.Signature(params, return_annotation=str)  # type: ignore[attr-defined]
    tool.__annotations__ = annotations
    return tool


def install_registry_tools(cls: type[ResearchEnv], specs: list[ToolSpec]) -> list[str]:
    """Give ``cls`` one public method per registry tool (and no other public method); returns the names."""
    for old in getattr(cls, "_registry_tools", []):
        if old in cls.__dict__:
            delattr(cls, old)
    for spec in specs:
        if spec.name.startswith("_") or spec.name in ("reset", "get_reward") or not spec.name.isidentifier():
            raise EnvError(f"registry tool name {spec.name!r} cannot be an environment method")
        setattr(cls, spec.name, _tool_method(spec))
    cls._registry_tools = [s.name for s in specs]
    return cls._registry_tools


def _registry_specs(config: EnvConfig | None = None) -> list[ToolSpec]:
    """The registry's specs for an environment run (no backend or model is touched to list them)."""
    probe = ResearchEnv.__new__(ResearchEnv)
    probe._config = config or EnvConfig()
    probe._options = _run_options(probe._config)
    probe._graph = AgentGraph(AgentDeps(model=None, backend=None), probe._options)  # type: ignore[arg-type]
    probe._run = None
    return probe._tool_specs()


def research_reward(
    environments: list[ResearchEnv] | None = None, log_metric: Any = None, **_: Any
) -> list[float]:
    """TRL reward function: the episode reward of each rollout's environment, with episode metrics logged."""
    if not environments:
        raise EnvError(
            "research_reward needs the trainer's environments (use environment_factory=ResearchEnv...)"
        )
    outcomes = [e._outcome() for e in environments]
    rewards = [e._reward() for e in environments]
    if log_metric is not None:
        for key, value in episode_metrics(outcomes, rewards, [e._turns() for e in environments]).items():
            log_metric(key, value)
    return [r.total for r in rewards]


install_registry_tools(ResearchEnv, _registry_specs())
