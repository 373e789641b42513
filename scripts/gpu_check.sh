#!/usr/bin/env bash
# Device check for the lent GPU machine (one H200; torch + transformers, but no trl, vLLM, pydantic,
# peft or model weights, no network; a call carries at most 64 MiB). It runs `python -m training.gpu`:
# the student's real shape (Qwen2.5-0.5B config, random init, bf16) timed on RL updates with chunked
# log-probs (8x8x1,024 and 4x16x4,096 tokens), sampling tokens/s, SIRAS shaping alone and overlapped
# with the next rollout; then a tiny seeded student learning a toy task with GRPO vs SIRAS (reward
# curves). Results: $OUT/results.json and $OUT/curve.json. (training/gpu_check.sh is the vLLM + TRL
# pipeline for clusters that have them.)
#
#   bash scripts/gpu_check.sh --prepare       # here: fetch pydantic wheels (cp312) into .whl/gpu-py312,
#                                             # check that what travels is under 64 MiB
#   bash scripts/gpu_check.sh                 # on the device: carry [".whl/gpu-py312"], ~8 minutes
#   bash scripts/gpu_check.sh --cpu --tiny    # local check of the same code (~20 s)
#
# Without the wheels the SIRAS parts report "skipped" (training.rl's config is a pydantic model); the
# real-shape timings run regardless.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${EVENTFOLD_PYTHON:-python3}"
WHEELS=".whl/gpu-py312"
LIMIT_MIB=64
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

travel_bytes() {  # tracked + untracked-not-ignored files, plus the carried wheels
  { git ls-files -co --exclude-standard -z; find "$WHEELS" -type f -print0 2>/dev/null; } \
    | xargs -0 stat -c %s 2>/dev/null | awk '{s += $1} END {print s + 0}'
}

if [ "${1:-}" = "--prepare" ]; then
  mkdir -p "$WHEELS"
  version=$("$PY" -c "import pydantic; print(pydantic.VERSION)" 2>/dev/null || echo "")
  "$PY" -m pip download --quiet --only-binary=:all: --implementation cp --python-version 3.12 \
    --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 -d "$WHEELS" "pydantic${version:+==$version}"
  ls -l "$WHEELS"
  bytes=$(travel_bytes)
  echo "[gpu_check] would travel: $(( bytes / 1048576 )) MiB (limit $LIMIT_MIB MiB)"
  [ "$bytes" -lt $(( LIMIT_MIB * 1048576 )) ] || { echo "[gpu_check] too large to carry"; exit 1; }
  echo "[gpu_check] device command: bash scripts/gpu_check.sh   (carry: [\"$WHEELS\"], timeout_s 600)"
  exit 0
fi

if [ "${1:-}" = "--cpu" ]; then
  OUT="${OUT:-/tmp/eventfold-gpu-check-cpu}"
  exec "$PY" -m training.gpu --mode all --device cpu --tiny --out "$OUT" --minutes "${GPU_CHECK_MINUTES:-1}"
fi

OUT="${OUT:-/tmp/eventfold-gpu-check}"
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader || true
if ! "$PY" -c "import pydantic" 2>/dev/null && ls "$WHEELS"/*.whl >/dev/null 2>&1; then
  if "$PY" -c "import sys; sys.exit(sys.version_info[:2] != (3, 12))"; then
    site="$(mktemp -d)/site"
    for w in "$WHEELS"/*.whl; do "$PY" -m zipfile -e "$w" "$site"; done
    export PYTHONPATH="$PYTHONPATH:$site"
    echo "[gpu_check] pydantic from the carried wheels: $("$PY" -c 'import pydantic; print(pydantic.VERSION)')"
  else
    echo "[gpu_check] carried wheels are for Python 3.12; this is $("$PY" -V): SIRAS parts will be skipped"
  fi
fi
timeout 580 "$PY" -m training.gpu --mode all --device cuda --out "$OUT" --minutes "${GPU_CHECK_MINUTES:-8}"
