"""scripts/neo4j/neo4j.sh: argument handling and status without starting a server (CI starts one
through scripts/test.sh, which exercises start/stop for real)."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "neo4j" / "neo4j.sh"


def run(*args: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "EVENTFOLD_HOME": str(home), "NEO4J_RUN_NAME": "absent"}
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_status_of_a_stopped_instance_fails_quietly(tmp_path: Path) -> None:
    out = run("status", home=tmp_path)
    assert out.returncode == 1 and out.stdout == "" and "not running" in out.stderr


def test_stop_when_not_running_is_harmless_and_usage_is_enforced(tmp_path: Path) -> None:
    assert run("stop", home=tmp_path).returncode == 0
    bad = run("restart-everything", home=tmp_path)
    assert bad.returncode == 1 and "usage" in bad.stderr


def test_run_name_cannot_leave_the_run_directory(tmp_path: Path) -> None:
    """`stop` does `rm -rf` of the run directory: a traversing NEO4J_RUN_NAME is refused before any of it."""
    victim = tmp_path / "x"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious")
    home = tmp_path / "home" / "a"
    # <home>/neo4j/run/../../../../x is tmp_path/x
    for name in ("../../../../x", "..", ".hidden", "a/b", " x"):
        env = {**os.environ, "EVENTFOLD_HOME": str(home), "NEO4J_RUN_NAME": name}
        out = subprocess.run(["bash", str(SCRIPT), "stop"], capture_output=True, text=True, env=env, timeout=60)
        assert out.returncode == 2 and "NEO4J_RUN_NAME" in out.stderr, (name, out.stderr)
    assert (victim / "keep.txt").read_text() == "precious"
