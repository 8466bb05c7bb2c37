#!/usr/bin/env bash
# The CPU kernel benchmark of the quantization issue: Loom and llama.cpp (llama-cpp-python) on the
# same llama-1b-shaped GGUF files (random weights, Llama 2 tokenizer) in f16, Q8_0 and Q4_0, at
# one thread count, back to back per file so the ratios hold on a noisy machine:
#   - pp512 and tg128 tokens/s of each engine and their ratio;
#   - Loom's tg effective bandwidth (bytes read per decode step x tokens/s) against the machine's
#     read bandwidth, measured in the same run by loom-bench model's STREAM-style test.
#
#   tools/bench/quantized-vs-llamacpp.sh [BUILD_DIR]   (THREADS=2, REPS=1, FORMATS="f16 q8_0 q4_0")
# Models are made once under BUILD_DIR/bench-models; JSON lands in BUILD_DIR/bench-results/quantized.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
threads="${THREADS:-2}"
reps="${REPS:-1}"
formats="${FORMATS:-f16 q8_0 q4_0}"
out="$build/bench-results/quantized"
models="$build/bench-models"
mkdir -p "$out" "$models"
python="$("$root/tools/peers/setup-llama-cpp.sh" "$build")"
vocab="$root/tests/data/vocab/ggml-vocab-llama-spm.gguf"

model_for() {  # model_for FORMAT -> path (made on first use)
  local path="$models/llama-1b-$1.gguf"
  if [[ ! -f "$path" ]]; then
    if [[ "$1" == f16 ]]; then
      "$bin/loom-convert" --random --preset llama-1b --dtype f16 --vocab-from "$vocab" -o "$path" >&2
    else
      "$bin/loom-convert" --random --preset llama-1b --dtype f16 --vocab-from "$vocab" --quantize "$1" -o "$path" >&2
    fi
  fi
  echo "$path"
}

for f in $formats; do
  m="$(model_for "$f")"
  plugin=none
  [[ "$f" == f16 ]] || plugin=gguf
  echo "== $f: Loom (quantization $plugin)" >&2
  "$bin/loom-bench" model -m "$m" -t "$threads" -p 512 -n 128 -b "" -r "$reps" --quantization "$plugin" \
    --json "$out/loom-$f.json" >&2
  echo "== $f: llama.cpp" >&2
  "$python" "$root/tools/peers/llama_model_bench.py" "$m" --threads "$threads" --pp 512 --tg 128 \
    --repetitions "$reps" --json "$out/llama-$f.json" >&2
done

python3 - "$out" $formats <<'PY'
import json, sys
out, formats = sys.argv[1], sys.argv[2:]
print("| model | test | Loom tok/s | llama.cpp tok/s | Loom / llama.cpp | Loom tg GB/s | of read bandwidth |")
print("|---|---|---|---|---|---|---|")
for f in formats:
    loom = json.load(open(f"{out}/loom-{f}.json"))
    peer = json.load(open(f"{out}/llama-{f}.json"))
    stream = loom.get("stream_read_bytes_per_s", 0.0)
    for t in loom["tests"]:
        p = peer[t["test"]]["mean"]
        bw = frac = ""
        if "effective_bytes_per_s" in t:
            bw = f"{t['effective_bytes_per_s'] / 1e9:.1f}"
            frac = f"{t['effective_bytes_per_s'] / stream:.0%}" if stream else ""
        print(f"| llama-1b {f} | {t['test']} | {t['avg_ts']:.2f} | {p:.2f} | {t['avg_ts'] / p:.2f}x | {bw} | {frac} |")
    print(f"<!-- {f}: read bandwidth {stream / 1e9:.2f} GB/s, bytes per decode step {loom['decode_bytes']} -->")
PY
