"""A GPU check that runs where only torch, transformers and numpy are installed (``python -m training.gpu``).

The lent device machine has no trl, vLLM, pydantic, peft or model weights, so this package builds its
models from configs (the student's real shape at random init for timing; a tiny seeded student that
learns a synthetic task) and implements the one RL update it measures with plain torch. Its modules
import only torch, transformers, numpy and the standard library at module level (tested with pydantic,
trl and peft blocked); SIRAS shaping (``training.rl``, pydantic-typed) is imported lazily by the stages
that need it and reported as skipped when it cannot be. Results are plain dataclasses written as JSON.
"""
