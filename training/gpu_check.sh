#!/usr/bin/env bash
# For GPU clusters with vLLM + TRL + the packaged student. The lent device machine has none of them
# (no trl, vLLM, pydantic or weights): it runs scripts/gpu_check.sh (python -m training.gpu) instead.
# Device check sized for ~10 minutes on one H200: the CPU pipeline of training/experiment.py at GPU
# scale — oracle-teacher SFT data, LoRA SFT (bf16), SIRAS-GRPO with vLLM colocated rollouts
# (8 rollouts x 4 prompts per step, UCB scheduling), held-out evaluation of the RL policy — then
# steps/s, tokens/s and the reward curve from the run's log.
#
#   bash training/gpu_check.sh --dry-run   # anywhere: validates configs, data, batch arithmetic, vLLM settings
#   bash training/gpu_check.sh             # on the GPU machine
#
# Needs there: a Python with eventfold's train + gpu extras (torch with CUDA, trl, peft, vllm, gguf),
# the student (EVENTFOLD_STUDENT: a packaged model name pulled into $EVENTFOLD_HOME/models, a .gguf
# file, or a saved HF directory) and the questions (EVENTFOLD_GPU_QUESTIONS, a HotpotQA-style folder;
# default: the repository's data/multihop/hotpotqa_train100).
# Each stage has its own time limit, so the whole script ends within 10 minutes even when a stage
# hangs; what finished is kept in $OUT (results.json, rl/log.jsonl).
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${EVENTFOLD_PYTHON:-python}"
OUT="${EVENTFOLD_GPU_OUT:-${OUT:-/tmp/eventfold-gpu-check}}"
STUDENT="${EVENTFOLD_STUDENT:-qwen2.5-coder-0.5b}"
QUESTIONS="${EVENTFOLD_GPU_QUESTIONS:-data/multihop/hotpotqa_train100}"
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
ARGS=(--out "$OUT" --questions "$QUESTIONS" --student "$STUDENT" --profile h200 --seed 0)

if [ "${1:-}" = "--dry-run" ]; then
  echo "[gpu_check] dry run: configs for the H200 profile (no training)"
  "$PY" -c "import torch; print('[gpu_check] CUDA available here:', torch.cuda.is_available())"
  exec "$PY" -m training.experiment "${ARGS[@]}" --dry-run
fi

start=$(date +%s)
nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv,noheader || true
"$PY" -c "import torch, trl, vllm; assert torch.cuda.is_available(), 'no CUDA device'; print('[gpu_check] torch', torch.__version__, 'trl', trl.__version__, 'vllm', vllm.__version__)"
"$PY" -m training.experiment "${ARGS[@]}" --dry-run
stage() {  # stage NAME SECONDS: one stage of the experiment under its own time limit
  local left=$(( 590 - ($(date +%s) - start) ))
  local limit=$(( $2 < left ? $2 : left ))
  if [ "$limit" -le 10 ]; then echo "[gpu_check] no time left for $1"; return 0; fi
  echo "[gpu_check] stage $1 (limit ${limit}s)"
  timeout "$limit" "$PY" -m training.experiment "${ARGS[@]}" --stages "$1" --deadline-min 2 || echo "[gpu_check] stage $1 stopped (rc $?)"
}
stage data 90        # index + oracle trajectories (CPU side)
stage sft 90         # LoRA SFT, bf16
stage rl 300         # 30 GRPO steps, vLLM colocated rollouts
stage eval-rl 150    # held-out questions with the RL policy
"$PY" -m training.curves "$OUT"
echo "[gpu_check] total $(( $(date +%s) - start )) s"
