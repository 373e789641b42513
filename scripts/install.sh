#!/usr/bin/env bash
# Install eventfold into one virtual environment kept outside the clone, so reruns and CI reuse it.
#   bash scripts/install.sh            # runtime + local llama.cpp backend
#   bash scripts/install.sh dev        # + training and test extras
# EVENTFOLD_VENV overrides the venv location (default ~/.cache/eventfold/venv).
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVENTFOLD_VENV:-$HOME/.cache/eventfold/venv}"
WHEELS="${EVENTFOLD_HOME:-$HOME/.cache/eventfold}/wheels"
extras="local"
[ "${1:-}" = "dev" ] && extras="local,train,dev"

if [ ! -x "$VENV/bin/python" ]; then
  echo "[install] creating $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q -U pip wheel setuptools
fi
mkdir -p "$WHEELS"
# llama-cpp-python builds from source (~7 min on 2 cores): keep the wheel so the next install takes it.
if ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1 && ! "$VENV/bin/python" -c "import llama_cpp" 2>/dev/null; then
  echo "[install] building llama-cpp-python (first time only, several minutes)" >&2
  "$VENV/bin/python" -m pip wheel -q --no-deps "llama-cpp-python>=0.3.36" -w "$WHEELS"
fi
start=$(date +%s)
"$VENV/bin/python" -m pip install -q --find-links "$WHEELS" -e ".[$extras]"
echo "[install] eventfold[$extras] ready in $VENV ($(( $(date +%s) - start )) s)" >&2
