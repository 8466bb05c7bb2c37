#!/usr/bin/env bash
# Model-level pp/tg of Loom (`loom-bench model`) and llama.cpp (its own `llama-bench`) on the same
# random-weight GGUF files, rounds alternating which engine goes first, medians over rounds. The
# files are `loom-convert --random` presets in f16, quantized by llama.cpp's own llama-quantize for
# every other type, so both engines read the bytes the peer's tools write.
#
#   tools/bench/model-vs-llama-bench.sh [BUILD_DIR]
# Environment: PRESETS ("gemma3-270m mixtral-1b"), TYPES ("f16 q8_0 q4_k_m"), ROUNDS (3), REPS
# per round (2), THREADS (nproc), PP (512), TG (128), LOOM_QUANT_CONFIG (the quantization plugin's
# config, "{}"), LLAMA_CPP_ISA (native). Loom's KV pool is f16, as llama-bench's. AVX2 against AVX2
# on an AVX-512 machine: LOOM_QUANT_CONFIG='{"simd": "avx2"}' LLAMA_CPP_ISA=avx2.
# Needs the peer's binaries (tools/peers/build-llama-cpp.sh, built on first use: long).
# Prints one markdown table; JSON per run lands in BUILD_DIR/bench-results/model-vs-llama-bench.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
presets="${PRESETS:-gemma3-270m mixtral-1b}"
types="${TYPES:-f16 q8_0 q4_k_m}"
rounds="${ROUNDS:-3}" reps="${REPS:-2}" threads="${THREADS:-$(nproc)}"
pp="${PP:-512}" tg="${TG:-128}"
out="$build/bench-results/model-vs-llama-bench"
models="$build/bench-models"
mkdir -p "$out" "$models"
rm -f "$out"/*.json
llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"
source "$root/tools/bench/bench_models.sh"

for preset in $presets; do
  for t in $types; do
    file="$(bench_model "$preset" "$t")"
    quant=gguf
    [[ "$t" == f16 ]] && quant=none
    for r in $(seq 1 "$rounds"); do
      loom() {
        "$bin/loom-bench" model -m "$file" -t "$threads" --quantization "$quant" \
          --quantization-config "${LOOM_QUANT_CONFIG:-{\}}" --kv-dtype f16 -p "$pp" -n "$tg" \
          -b "" -r "$reps" --no-stream --json "$out/$preset-$t-loom-$r.json" >/dev/null
      }
      peer() {
        "$llama_bin/llama-bench" -m "$file" -t "$threads" -p "$pp" -n "$tg" -r "$reps" -o json \
          >"$out/$preset-$t-llama-$r.json" 2>/dev/null
      }
      if (( r % 2 )); then loom; peer; else peer; loom; fi
      echo "model-vs-llama-bench: $preset $t round $r done" >&2
    done
  done
done

python3 - "$out" "$threads" "$rounds" <<'PY'
import glob, json, os, re, statistics, sys
out, threads, rounds = sys.argv[1], sys.argv[2], sys.argv[3]
rows = {}
for path in sorted(glob.glob(os.path.join(out, "*.json"))):
    m = re.match(r"(.+)-([a-z0-9_]+)-(loom|llama)-(\d+)\.json$", os.path.basename(path))
    preset, t, engine = m.group(1), m.group(2), m.group(3)
    data = json.load(open(path))
    if engine == "loom":
        for test in data["tests"]:
            rows.setdefault((preset, t, test["test"]), {}).setdefault("loom", []).append(test["avg_ts"])
    else:
        for test in data:
            name = f"pp{test['n_prompt']}" if test["n_gen"] == 0 else f"tg{test['n_gen']}"
            rows.setdefault((preset, t, name), {}).setdefault("llama", []).append(test["avg_ts"])
print(f"threads {threads}, medians of {rounds} alternating rounds (tokens/s)\n")
print("| model | type | test | Loom | llama.cpp | Loom / llama.cpp |")
print("|---|---|---|---|---|---|")
for (preset, t, test), v in sorted(rows.items()):
    lo, ll = statistics.median(v.get("loom", [0])), statistics.median(v.get("llama", [0]))
    ratio = f"{lo / ll:.2f}x" if ll > 0 else "-"
    print(f"| {preset} | {t} | {test} | {lo:.1f} | {ll:.1f} | {ratio} |")
PY
