"""What a resumed RL run must share with the run whose checkpoints it continues.

A run resumes from the last checkpoint in its ``output_dir``. Continuing another run's checkpoints
under a different seed, estimator, starting model, adapter, question set or corpus would mix two runs
into one log and one curve without a word, so a resume whose config differs from the saved
``run_config.json`` in what identifies the run (``IDENTITY``) is refused, naming each difference. How the
run goes on (steps, learning rate, temperature, resampling, the episode's options) may change: a
schedule set by hand is still one run.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from training.config import PATH_KEYS, ConfigError, RLRunConfig
from training.rl.result import RUN_CONFIG

# settings (or whole sections, ending in ".") a resumed run must share with the run it continues
IDENTITY = ("model.", "questions.", "corpus.", "advantage.", "lora.", "grpo.seed", "launch.rollout")
DIGEST_LIMIT = 64 << 20  # bytes hashed per side; a larger folder (model weights) is compared by place only


def _identity(key: str) -> bool:
    return any(key.startswith(k) if k.endswith(".") else key == k for k in IDENTITY)


def _flat(value: Any, prefix: str = "") -> dict[str, Any]:
    if isinstance(value, dict):
        out: dict[str, Any] = {}
        for key, item in value.items():
            out.update(_flat(item, f"{prefix}{key}."))
        return out
    return {prefix[:-1]: value}


def _digest(path: Path) -> str | None:
    """sha256 over a file, or over a folder's relative names and contents; None past ``DIGEST_LIMIT``."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    if sum(f.stat().st_size for f in files) > DIGEST_LIMIT:
        return None
    h = hashlib.sha256()
    for f in files:
        h.update(str(f.relative_to(path) if path.is_dir() else "").encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()


def _same(key: str, old: Any, new: Any) -> bool:
    """Equal, or a path setting (``PATH_KEYS``) naming the same content at another place: a fresh clone of
    the repository, a moved cache."""
    if old == new:
        return True
    if not (isinstance(old, str) and isinstance(new, str) and key.rsplit(".", 1)[-1] in PATH_KEYS):
        return False
    a, b = Path(old).expanduser(), Path(new).expanduser()
    if a.resolve() == b.resolve():
        return True
    try:
        if not (a.exists() and b.exists()):
            return False
        da = _digest(a)
        return da is not None and da == _digest(b)
    except OSError:
        return False


def resume_conflicts(saved: dict[str, Any], cfg: RLRunConfig) -> list[str]:
    """``key: saved -> now`` for each identifying setting ``cfg`` changes from the saved run config. A key
    only one side has (a setting added to the config schema since the run started) is not a conflict; a
    path naming the same content elsewhere (the repository's data in another clone) is not either."""
    old, new = _flat(saved), _flat(cfg.model_dump(mode="json"))
    return [f"{key}: {old[key]!r} -> {new[key]!r}" for key in sorted(old.keys() & new.keys())
            if _identity(key) and not _same(key, old[key], new[key])]  # fmt: skip


def check_resume(cfg: RLRunConfig, checkpoint: str | None) -> None:
    """ConfigError when ``cfg`` would resume ``checkpoint`` of a run saved with other settings."""
    path = Path(cfg.output_dir) / RUN_CONFIG
    if checkpoint is None or not path.is_file():
        return
    try:
        saved = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise ConfigError(f"{path} cannot be read ({exc}); resume with a readable run config or --no-resume") from exc
    conflicts = resume_conflicts(saved, cfg)
    if conflicts:
        shown = "; ".join(conflicts[:8]) + (f" (+{len(conflicts) - 8} more)" if len(conflicts) > 8 else "")
        raise ConfigError(
            f"{cfg.output_dir} holds checkpoints of a run with other settings ({shown}); resuming would mix the "
            f"two runs. Train into another folder (--output-dir) or start over there (--no-resume)"
        )
