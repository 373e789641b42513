"""Run the RL pipeline asynchronously (rollout ‖ verification ‖ learner) or synchronously.

async: ``rollout_workers`` processes generate sibling groups with the latest published weights
(shared memory, reloaded whenever the learner's version moved) → a bounded queue →
``verify_workers`` threads compute rewards (groups already staler than ``max_lag`` are dropped
before verification) → a :class:`StalenessQueue` → the learner takes ``groups_per_step`` groups per
step (lag ≤ k, importance-weighted or lag-dropped, :mod:`training.rl.pipeline.learner`) and
publishes new weights. Generation of step t+1 overlaps verification and the update of step t.

sync: the same generation, verification and learner code one after another in one process — the
baseline the async mode is measured against (``bench/async_rl.py``).

GPU: ``cfg.rollout = "vllm_server"`` generates through a running vLLM server (threads instead of
processes; weights pushed over NCCL after every step) — :class:`VLLMServerRollout`.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import torch

from training.common.loading import load_model_and_tokenizer
from training.rl.pipeline.config import PipelineConfig
from training.rl.pipeline.learner import Learner
from training.rl.pipeline.rollout import RolloutGroup, VLLMServerRollout, hf_rollout_worker, sample_group
from training.rl.pipeline.staleness import StalenessQueue, WeightStore
from training.rl.siras import SirasConfig

RewardFn = Callable[..., list[float | None]]


@dataclass
class PipelineResult:
    mode: str
    rewards: list[float] = field(default_factory=list)  # per learner step
    metrics: list[dict[str, float]] = field(default_factory=list)
    wall_s: float = 0.0
    samples: int = 0  # trained on
    generated: int = 0  # groups generated and received
    dropped: int = 0  # groups dropped as too stale
    lags: dict[int, int] = field(default_factory=dict)

    @property
    def samples_per_s(self) -> float:
        return self.samples / self.wall_s if self.wall_s > 0 else 0.0


def verify(group: RolloutGroup, reward_fn: RewardFn) -> RolloutGroup:
    group.rewards = list(reward_fn(prompts=[group.prompt] * len(group.texts), completions=group.texts))
    return group


def run_pipeline(
    model_dir: str | Path,
    prompts: Iterable[str],
    reward_fn: RewardFn,
    steps: int,
    cfg: PipelineConfig,
    advantage: str = "siras",
    siras: SirasConfig | None = None,
    mode: str = "async",
    seed: int = 0,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> PipelineResult:
    """Train for ``steps`` learner steps; returns per-step rewards, throughput and staleness stats."""
    if mode not in ("async", "sync"):
        raise ValueError(f"mode must be 'async' or 'sync' (got {mode!r})")
    torch.set_num_threads(cfg.torch_threads)
    torch.manual_seed(seed)
    model, tok = load_model_and_tokenizer(model_dir, dtype=torch.float32)
    learner = Learner(model, tok, cfg, advantage, siras)
    it = iter(prompts)
    if mode == "sync":
        return _run_sync(learner, it, reward_fn, steps, on_step)
    return _run_async(str(model_dir), learner, it, reward_fn, steps, seed, on_step)


def _record(res: PipelineResult, step: int, m: dict[str, float], on_step) -> None:
    res.rewards.append(m["reward"])
    res.metrics.append(m)
    res.samples += int(m["samples"])
    if on_step is not None:
        on_step(step, m)


def _run_sync(
    learner: Learner, prompts: Iterator[str], reward_fn: RewardFn, steps: int, on_step
) -> PipelineResult:
    cfg, res = learner.cfg, PipelineResult("sync")
    vllm = VLLMServerRollout(learner.tok, cfg) if cfg.rollout == "vllm_server" else None
    t0 = time.perf_counter()
    for step in range(steps):
        groups = []
        for _ in range(cfg.groups_per_step):
            learner.model.eval()
            p = next(prompts)
            g = (
                vllm.generate(p, learner.version)
                if vllm
                else sample_group(learner.model, learner.tok, p, cfg, learner.version)
            )
            groups.append(verify(g, reward_fn))
        res.generated += len(groups)
        _record(res, step, learner.step(groups, [0] * len(groups)), on_step)
        if vllm:
            vllm.push_weights(learner.model)
    res.wall_s = time.perf_counter() - t0
    res.lags = {0: res.generated}
    return res


class _Workers:
    """The async side: rollout processes (or vLLM threads), a prompt feeder, verification threads."""

    def __init__(
        self,
        model_dir: str | None,
        learner: Learner,
        prompts: Iterator[str] | None,
        reward_fn: RewardFn | None,
        seed: int,
        thread_rollouts: list[Any] | None = None,
    ):
        cfg = learner.cfg
        self.cfg, self.learner, self.reward_fn = cfg, learner, reward_fn
        self.stop = threading.Event()
        self.verified: StalenessQueue[RolloutGroup] = StalenessQueue(
            cfg.queue_size, cfg.max_lag, lambda: learner.version
        )
        self.generated = self.dropped_early = 0
        self.threads: list[threading.Thread] = []
        self.errors: list[BaseException] = []
        self.procs: list[Any] = []
        self.rollout_kind = "threads" if thread_rollouts else cfg.rollout
        if thread_rollouts:
            self.store = WeightStore(_snapshot(learner.model), learner.version)
            self.gen_q = queue.Queue(maxsize=cfg.queue_size)
            for r in thread_rollouts:
                self._start_threads(lambda r=r: self._thread_loop(r), 1)
        elif cfg.rollout == "vllm_server":
            self.vllm = VLLMServerRollout(learner.tok, cfg)
            self.gen_q: Any = queue.Queue(maxsize=cfg.queue_size)
            self.prompt_q: Any = queue.Queue(maxsize=cfg.rollout_workers)
            self._start_threads(self._vllm_loop, cfg.rollout_workers)
        else:
            ctx = torch.multiprocessing.get_context("spawn")
            self.shared = {
                k: v.detach().clone().share_memory_() for k, v in learner.model.state_dict().items()
            }
            self.version, self.lock = ctx.Value("i", 0), ctx.Lock()
            self.gen_q, self.prompt_q = (
                ctx.Queue(maxsize=cfg.queue_size),
                ctx.Queue(maxsize=cfg.rollout_workers),
            )
            for i in range(cfg.rollout_workers):
                args = (
                    model_dir,
                    cfg,
                    self.shared,
                    self.version,
                    self.lock,
                    self.prompt_q,
                    self.gen_q,
                    seed + 1 + i,
                )
                p = ctx.Process(target=hf_rollout_worker, args=args, daemon=True)
                p.start()
                self.procs.append(p)
        if prompts is not None:
            self._start_threads(lambda: self._feed(prompts), 1)
        self._start_threads(self._verify_loop, cfg.verify_workers)

    def _start_threads(self, fn: Callable[[], None], n: int) -> None:
        def guarded() -> None:
            try:
                fn()
            except BaseException as e:  # surfaced in the learner's loop, never lost in a thread
                self.errors.append(e)
                self.stop.set()

        for _ in range(n):
            t = threading.Thread(target=guarded, daemon=True)
            t.start()
            self.threads.append(t)

    def _feed(self, prompts: Iterator[str]) -> None:
        for p in prompts:
            while not self.stop.is_set():
                try:
                    self.prompt_q.put(p, timeout=0.2)
                    break
                except queue.Full:
                    continue
            if self.stop.is_set():
                return

    def _thread_loop(self, rollout: Any) -> None:
        """A thread rollout (e.g. TRL's multi-turn tool loop): reload newer weights, generate groups."""
        while not self.stop.is_set():
            rollout.sync(*self.store.latest())
            for g in rollout.generate():
                while not self.stop.is_set():
                    try:
                        self.gen_q.put(g, timeout=0.2)
                        break
                    except queue.Full:
                        continue

    def _vllm_loop(self) -> None:
        while not self.stop.is_set():
            try:
                p = self.prompt_q.get(timeout=0.2)
            except queue.Empty:
                continue
            self.gen_q.put(self.vllm.generate(p, self.learner.version))

    def _verify_loop(self) -> None:
        while not self.stop.is_set():
            try:
                g = self.gen_q.get(timeout=0.2)
            except queue.Empty:
                continue
            self.generated += 1
            if self.learner.version - g.version > self.cfg.max_lag:
                self.dropped_early += 1  # too stale already: not worth verifying
                continue
            self.verified.put(g if g.rewards is not None else verify(g, self.reward_fn), g.version)

    def next_group(self, timeout: float) -> tuple[RolloutGroup, int]:
        """The next verified group within the lag bound; a worker's exception or dead rollout processes
        raise here instead of leaving the learner waiting."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.errors:
                raise RuntimeError(f"async pipeline worker failed: {self.errors[0]!r}") from self.errors[0]
            if self.procs and not any(p.is_alive() for p in self.procs):
                raise RuntimeError("async pipeline: every rollout worker process exited")
            got = self.verified.get(timeout=0.5)
            if got is not None:
                return got
        raise RuntimeError(f"async pipeline: no verified group within {timeout:.0f} s")

    def publish(self) -> None:
        if self.rollout_kind == "threads":
            self.store.publish(_snapshot(self.learner.model), self.learner.version)
            return
        if self.cfg.rollout == "vllm_server":
            self.vllm.push_weights(self.learner.model)
            return
        with self.lock:
            for k, v in self.learner.model.state_dict().items():
                self.shared[k].copy_(v)
            self.version.value = self.learner.version

    def close(self) -> None:
        self.stop.set()
        self.verified.close()
        for p in self.procs:
            p.terminate()  # our own rollout processes; they hold no state worth a clean shutdown
            p.join(timeout=5)
        for t in self.threads:
            t.join(timeout=2)


def _snapshot(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    return {k: v.detach().clone() for k, v in model.state_dict().items()}


def run_thread_rollouts(
    learner: Learner,
    rollouts: list[Any],
    steps: int,
    on_step: Callable[[int, dict[str, float]], None] | None = None,
) -> PipelineResult:
    """The async loop with thread rollouts (objects with ``sync(version, state)`` and ``generate()`` →
    groups whose rewards are already set, e.g. :class:`training.rl.pipeline.research.TRLRollout`)."""
    return _run_async(None, learner, None, None, steps, 0, on_step, rollouts)


def _run_async(
    model_dir, learner, prompts, reward_fn, steps, seed, on_step, thread_rollouts=None
) -> PipelineResult:
    cfg, res = learner.cfg, PipelineResult("async")
    workers = _Workers(model_dir, learner, prompts, reward_fn, seed, thread_rollouts)
    try:
        t0 = None
        for step in range(steps):
            groups, lags = [], []
            while len(groups) < cfg.groups_per_step:
                got = workers.next_group(timeout=600)
                if t0 is None:  # the clock starts at the first verified group: worker start-up excluded
                    t0 = time.perf_counter() - got[0].gen_s
                groups.append(got[0])
                lags.append(got[1])
            _record(res, step, learner.step(groups, lags), on_step)
            workers.publish()
        res.wall_s = time.perf_counter() - (t0 or time.perf_counter())
    finally:
        workers.close()
    res.generated = workers.generated
    res.dropped = workers.dropped_early + workers.verified.dropped
    res.lags = dict(workers.verified.lags)
    return res
