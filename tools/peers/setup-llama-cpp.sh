#!/usr/bin/env bash
# Installs the peer, llama-cpp-python (llama.cpp's engine + its OpenAI-compatible server), from
# PyPI into a private virtual environment under the build directory. Optional: nothing in Loom's
# build or core tests needs it. PyPI ships it as source, so this compiles llama.cpp once
# (about 10 minutes on 2 cores), built for this machine's CPU like a local llama.cpp build.
#
#   tools/peers/setup-llama-cpp.sh [BUILD_DIR]     -> prints the venv's python path
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="${1:-$root/build}"
venv="$build/peers/llama-cpp-venv"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"

if [[ -x "$venv/bin/python" ]] && "$venv/bin/python" -c "import llama_cpp, llama_cpp.server" 2>/dev/null; then
  echo "$venv/bin/python"
  exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! command -v cmake >/dev/null; then
  if [[ $(id -u) -eq 0 ]]; then
    apt-get update -qq >&2 && apt-get install -y -qq python3-venv python3-pip cmake g++ >&2
  else
    echo "setup-llama-cpp: needs python3-venv, cmake and g++ (apt-get install python3-venv cmake g++)" >&2
    exit 1
  fi
fi
mkdir -p "$build/peers"
python3 -m venv "$venv" >&2
"$venv/bin/pip" install -q --upgrade pip >&2
# GGML_NATIVE: tuned for this CPU (AVX2/FMA/F16C where present), as llama.cpp builds by default.
CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF" \
CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
  "$venv/bin/pip" install -q "llama-cpp-python[server]==$version" >&2
"$venv/bin/python" -c "import llama_cpp, llama_cpp.server; print('llama-cpp-python', llama_cpp.__version__)" >&2
echo "$venv/bin/python"
