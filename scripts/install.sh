#!/usr/bin/env bash
# Install eventfold into one virtual environment kept outside the clone, so reruns and CI reuse it.
#   bash scripts/install.sh            # runtime + local llama.cpp backend (+ the default model, fetched meanwhile)
#   bash scripts/install.sh dev        # + training and test extras (+ the small 0.5B model)
# EVENTFOLD_VENV overrides the venv location (default ~/.cache/eventfold/venv); EVENTFOLD_NO_PULL=1 skips
# the model download.
#
# On a fresh machine the slow step is compiling llama-cpp-python. It runs in the background, built
# with only what eventfold loads (libllama + libggml: no multimodal mtmd library, no llama.cpp
# `common`, see scripts/cmake/llama_cpp_minimal.cmake), while the other dependencies and the model
# download (network-bound) proceed; the wheel is kept, so the next install takes it.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${EVENTFOLD_VENV:-$HOME/.cache/eventfold/venv}"
WHEELS="${EVENTFOLD_HOME:-$HOME/.cache/eventfold}/wheels"
extras="local"
model="qwen2.5-coder-1.5b"
if [ "${1:-}" = "dev" ]; then extras="local,train,dev"; model="qwen2.5-coder-0.5b"; fi
t0=$(date +%s)
say() { echo "[install] +$(( $(date +%s) - t0 ))s $*" >&2; }

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/python" -m pip install -q -U pip wheel setuptools
fi
mkdir -p "$WHEELS"
build_pid=""
build_log="$WHEELS/llama-cpp-python-build.log"
llama_spec="llama-cpp-python>=0.3.36"
llama_cmake_args="-DLLAVA_BUILD=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_TOOLS=OFF ${CMAKE_ARGS:-}"
# A wheel (and the copy installed from it) is reused only while it was built by this recipe: the
# spec, the CMake arguments and the included CMake file. A recipe change (such as leaving out ggml's
# AMX kernels, see the CMake file) or a missing wheel rebuilds it and replaces the installed copy.
recipe="$(printf '%s\n%s\n' "$llama_spec" "$llama_cmake_args" | cat - scripts/cmake/llama_cpp_minimal.cmake | sha256sum | cut -c1-16)"
stamp="$WHEELS/llama-cpp-python.recipe"
if [ "$(cat "$stamp" 2>/dev/null)" != "$recipe" ] || ! ls "$WHEELS"/llama_cpp_python-*.whl >/dev/null 2>&1; then
  say "building llama-cpp-python in the background (once per build recipe; log: $build_log)"
  rm -f "$WHEELS"/llama_cpp_python-*.whl "$stamp"
  staging="$(mktemp -d "$WHEELS/.build-XXXXXX")"
  (
    export CMAKE_ARGS="$llama_cmake_args -DCMAKE_PROJECT_llama.cpp_INCLUDE=$PWD/scripts/cmake/llama_cpp_minimal.cmake"
    export CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}"
    # --no-cache-dir: pip's wheel cache is keyed by the sdist alone and would hand back a wheel
    # built with other CMake arguments
    "$VENV/bin/python" -m pip wheel -q --no-cache-dir --no-deps "$llama_spec" -w "$staging" \
      && mv "$staging"/llama_cpp_python-*.whl "$WHEELS"/ && rmdir "$staging" \
      && echo "$recipe" > "$stamp"
  ) >"$build_log" 2>&1 &
  build_pid=$!
fi
# everything but llama-cpp-python, while it compiles (downloads, mostly)
base="${extras#local}"; base="${base#,}"
"$VENV/bin/python" -m pip install -q --find-links "$WHEELS" -e ".${base:+[$base]}"
say "dependencies installed"
pull_pid=""
if [ -z "${EVENTFOLD_NO_PULL:-}" ]; then
  "$VENV/bin/eventfold" model pull "$model" >"$WHEELS/../model-pull.log" 2>&1 &
  pull_pid=$!
fi
if [ -n "$build_pid" ]; then
  if ! wait "$build_pid"; then
    tail -n 30 "$build_log" >&2
    say "building llama-cpp-python failed (full log: $build_log)"
    exit 1
  fi
  say "llama-cpp-python built"
fi
# the venv's copy too is replaced when another recipe built it (a venv older than the wheel's recipe)
if [ "$(cat "$VENV/llama-cpp-python.recipe" 2>/dev/null)" != "$recipe" ]; then
  "$VENV/bin/python" -m pip install -q --force-reinstall --no-deps "$WHEELS"/llama_cpp_python-*.whl
  echo "$recipe" > "$VENV/llama-cpp-python.recipe"
fi
"$VENV/bin/python" -m pip install -q --find-links "$WHEELS" -e ".[$extras]"
if [ -n "$pull_pid" ]; then
  if wait "$pull_pid"; then say "model $model ready"; else say "model pull failed (retry: eventfold model pull $model)"; fi
fi
say "eventfold[$extras] ready in $VENV"
