# Sourced by the scripts that run Loom and llama.cpp on the same random-weight files
# (model-vs-llama-bench.sh, batched-decode.sh). Needs $root, $bin, $models and $llama_bin set.
# shellcheck shell=bash

# bench_model PRESET TYPE: prints the path of PRESET's random-weight model in TYPE, making it on
# first use: `loom-convert --random` writes the f16 file (the Llama 2 vocabulary of the tests),
# llama.cpp's own llama-quantize every other type from it, so both engines read the bytes the
# peer's tools write.
bench_model() {
  local f16="$models/$1-f16.gguf" file="$models/$1-$2.gguf"
  [[ -f "$f16" ]] || "$bin/loom-convert" --random --preset "$1" --dtype f16 \
    --vocab-from "$root/tests/data/vocab/ggml-vocab-llama-spm.gguf" -o "$f16" >&2
  [[ "$2" == f16 || -f "$file" ]] || "$llama_bin/llama-quantize" "$f16" "$file" "$2" >/dev/null 2>&1
  echo "$file"
}
