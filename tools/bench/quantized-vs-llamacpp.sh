#!/usr/bin/env bash
# The CPU kernel benchmark of the quantization issue: Loom and llama.cpp (llama-cpp-python) on the
# same llama-1b-shaped GGUF files (random weights, Llama 2 tokenizer) in f16, Q8_0 and Q4_0, at
# one thread count, back to back per file so the ratios hold on a noisy machine:
#   - pp512 and tg128 tokens/s of each engine and their ratio;
#   - Loom's tg effective bandwidth (bytes read per decode step x tokens/s) against the machine's
#     read bandwidth, measured in the same run by loom-bench model's STREAM-style test.
#
# ROUNDS > 1 repeats each file's pair, alternating which engine goes first (Loom, llama.cpp, then
# llama.cpp, Loom, ...), so a slow or fast phase of a shared host lands on both; the table then
# gives each engine's median over the rounds and every round's own ratio.
#
#   tools/bench/quantized-vs-llamacpp.sh [BUILD_DIR]   (THREADS=2, REPS=1, ROUNDS=1,
#                                                       FORMATS="f16 q8_0 q4_0")
# Models are made once under BUILD_DIR/bench-models; JSON lands in BUILD_DIR/bench-results/quantized.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
threads="${THREADS:-2}"
reps="${REPS:-1}"
rounds="${ROUNDS:-1}"
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

run_loom() {  # run_loom FORMAT MODEL ROUND
  local plugin=none
  [[ "$1" == f16 ]] || plugin=gguf
  echo "== $1 round $3: Loom (quantization $plugin)" >&2
  "$bin/loom-bench" model -m "$2" -t "$threads" -p 512 -n 128 -b "" -r "$reps" --quantization "$plugin" \
    --json "$out/loom-$1-$3.json" >&2
}
run_peer() {  # run_peer FORMAT MODEL ROUND
  echo "== $1 round $3: llama.cpp" >&2
  "$python" "$root/tools/peers/llama_model_bench.py" "$2" --threads "$threads" --pp 512 --tg 128 \
    --repetitions "$reps" --json "$out/llama-$1-$3.json" >&2
}

for f in $formats; do
  m="$(model_for "$f")"
  for ((r = 1; r <= rounds; ++r)); do
    if ((r % 2 == 1)); then
      run_loom "$f" "$m" "$r"
      run_peer "$f" "$m" "$r"
    else
      run_peer "$f" "$m" "$r"
      run_loom "$f" "$m" "$r"
    fi
  done
done

python3 - "$out" "$rounds" $formats <<'PY'
import json, statistics, sys
out, rounds, formats = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
print("| model | test | Loom tok/s | llama.cpp tok/s | Loom / llama.cpp | per round | Loom tg GB/s | of read bandwidth |")
print("|---|---|---|---|---|---|---|---|")
for f in formats:
    looms = [json.load(open(f"{out}/loom-{f}-{r}.json")) for r in range(1, rounds + 1)]
    peers = [json.load(open(f"{out}/llama-{f}-{r}.json")) for r in range(1, rounds + 1)]
    streams = [l.get("stream_read_bytes_per_s", 0.0) for l in looms]
    stream = statistics.median(streams)
    for i, t in enumerate(looms[0]["tests"]):
        name = t["test"]
        mine = [l["tests"][i]["avg_ts"] for l in looms]
        theirs = [p[name]["mean"] for p in peers]
        per_round = " ".join(f"{a / b:.2f}" for a, b in zip(mine, theirs))
        bw = frac = ""
        if "effective_bytes_per_s" in t:
            eff = [l["tests"][i]["effective_bytes_per_s"] for l in looms]
            bw = f"{statistics.median(eff) / 1e9:.1f}"
            # Each round's bandwidth over its own STREAM figure, then the median.
            frac = f"{statistics.median(e / s for e, s in zip(eff, streams) if s):.0%}" if all(streams) else ""
        a, b = statistics.median(mine), statistics.median(theirs)
        print(f"| llama-1b {f} | {name} | {a:.2f} | {b:.2f} | {a / b:.2f}x | {per_round} | {bw} | {frac} |")
    print(f"<!-- {f}: read bandwidth {stream / 1e9:.2f} GB/s (median of {rounds}), bytes per decode step {looms[0]['decode_bytes']} -->")
PY
