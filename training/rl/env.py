"""The research environment for RL: the real agent tools over an indexed corpus, one episode per rollout.

It plugs into TRL's ``GRPOTrainer(environment_factory=...)``: TRL creates one instance per rollout,
calls ``reset(**row)`` with the dataset row (``question``, ``answer``, optional ``answer_aliases``),
and exposes the public methods ``search``, ``read``, ``fold``, ``unfold`` and ``answer`` as tools
(their docstrings become the JSON schemas). Each call is executed by the agent's own ``tools`` node
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
environment, returns the episode reward and logs accuracy, F1, folds/unfolds per episode, peak
context tokens and the answered share (``log_metric``).
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agent import prompts
from agent.graph import AgentDeps, AgentGraph
from agent.llm import ChatModel, Message, ToolCall
from agent.state import RunState
from eventfold.run_options import run_options_with
from eventrag.schema import SearchBackend
from training.rl.rewards import EpisodeOutcome, RewardBreakdown, RewardConfig, episode_reward

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


class ResearchEnv:
    """One rollout's episode. Public methods (besides reset) are the agent's tools."""

    def __init__(self, backend: SearchBackend, counter: ChatModel, config: EnvConfig | None = None) -> None:
        self._config = config or EnvConfig()
        # the environment always offers fold/unfold, and no LLM runs inside a rollout: the policy may
        # write its own fold summary, else the summary is deterministic
        self._options = self._config.run.model_copy(update={"fold": True, "fold_summary": "deterministic"})
        self._graph = AgentGraph(AgentDeps(model=counter, backend=backend), self._options)
        self._run: RunState | None = None
        self._golds: list[str] = []
        self._episodes = 0

    # --- TRL protocol ---------------------------------------------------------------------------
    def reset(self, **row: Any) -> str | None:
        question = " ".join(str(row.get("question") or "").split())
        if not question:
            raise EnvError(f"dataset row has no 'question' (keys: {sorted(row)})")
        self._episodes += 1
        self._run = RunState(run_id=f"rl-{id(self):x}-{self._episodes}", question=question)
        self._golds = golds_of(row)
        self._sample_context()
        return None  # the prompt holds the question and the first status line (training.rl.run.rl_rows)

    # --- tools (docstrings are the schemas TRL shows the policy) --------------------------------
    def search(self, query: str) -> str:
        """Search the corpus for evidence. Returns numbered passages with chunk ids [c:ID] and document ids.

        Args:
            query: a short, specific search query
        """
        return self._step("search", {"query": query})

    def read(self, id: str) -> str:
        """Open a chunk (id from [c:ID]) or a whole document (doc id) to read its full text.

        Args:
            id: a chunk id (as in [c:ID]) or a document id
        """
        return self._step("read", {"id": id})

    def fold(self, start_step: int, end_step: int, summary: str | None = None) -> str:
        """Fold steps start_step..end_step into a short memory block (originals are kept; unfold restores them).

        Args:
            start_step: first step to fold
            end_step: last step to fold (an earlier step than the current one)
            summary: optional: your own summary of what these steps found, citing [c:ID]
        """
        return self._step("fold", {"start_step": start_step, "end_step": end_step, "summary": summary})

    def unfold(self, fold_id: str) -> str:
        """Restore the original steps of a fold into the context.

        Args:
            fold_id: the fold to restore, e.g. "F1"
        """
        return self._step("unfold", {"fold_id": fold_id})

    def answer(self, answer: str) -> str:
        """Finish: give the final SHORT answer (a few words: a name, date, number, yes/no).

        Args:
            answer: the answer only: a name, date, number, yes/no or a short phrase
        """
        return self._step("answer", {"answer": answer})

    # --- internals ------------------------------------------------------------------------------
    def _step(self, name: str, arguments: dict[str, Any]) -> str:
        run = self._run
        if run is None:
            raise EnvError("call reset() before using a tool")
        if run.status != "running":
            run.counters.tool_errors += 1
            return "error: the episode has ended (an answer was given); do not call more tools"
        if len(run.steps) >= self._options.max_steps:
            run.counters.tool_errors += 1
            run.status, run.stop_reason = "forced", f"step cap of {self._options.max_steps} reached"
            return f"error: step cap of {self._options.max_steps} reached; the episode is over"
        args = {k: v for k, v in arguments.items() if v is not None}
        call = ToolCall(id=f"call_{run.next_step}", name=name, arguments=args)
        run.pending = [Message(role="assistant", content="", tool_calls=[call])]
        run = RunState.from_graph(self._graph.tools(run.to_graph()))
        if self._config.guard and run.status == "running":
            update = self._graph.guard(run.to_graph())
            run = RunState.from_graph(update) if update else run
        self._run = run
        self._sample_context()
        return f"{run.steps[-1].results[0].content}\n{self._status()}"

    def _status(self) -> str:
        """The agent's status line (step number for fold ranges, rendered context vs budget), as the
        agent shows it before each turn at inference."""
        run = self.run_state
        return prompts.STATUS.format(
            step=run.next_step,
            max_steps=self._options.max_steps,
            tokens=run.counters.final_context_tokens,
            budget=self._options.context_budget,
        )

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
        run = self.run_state
        c = run.counters
        return EpisodeOutcome(
            answer=run.answer if run.status == "answered" else None,
            golds=self._golds,
            peak_context_tokens=c.peak_context_tokens,
            tool_calls=c.tool_calls,
            invalid_calls=c.tool_errors + c.invalid_turns,
            folds=c.folds,
            unfolds=c.unfolds,
        )

    def _reward(self) -> RewardBreakdown:
        return episode_reward(self._outcome(), self._config.reward)


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
        n = len(rewards)
        log_metric("episode/em", sum(r.em for r in rewards) / n)
        log_metric("episode/f1", sum(r.f1 for r in rewards) / n)
        log_metric("episode/answered", sum(o.answer is not None for o in outcomes) / n)
        log_metric("episode/folds", sum(o.folds for o in outcomes) / n)
        log_metric("episode/unfolds", sum(o.unfolds for o in outcomes) / n)
        log_metric("episode/peak_context_tokens", sum(o.peak_context_tokens for o in outcomes) / n)
        log_metric("episode/context_cost", sum(r.context_cost for r in rewards) / n)
        log_metric("episode/format", sum(r.format for r in rewards) / n)
    return [r.total for r in rewards]
