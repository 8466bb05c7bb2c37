#!/usr/bin/env bash
# Batched decode against llama.cpp on the same files: Loom's `loom-bench model -b B` (B sequences
# of PROMPT tokens each, then STEPS timed decode steps of all B) and llama.cpp's own
# `llama-batched-bench -npl B` (its S_TG over the same prompt and step counts, flash attention on,
# f16 KV as Loom's here), rounds alternating which engine goes first, medians over rounds, on
# bench_models.sh's random-weight files.
#
#   tools/bench/batched-decode.sh [BUILD_DIR]
# Environment: PRESETS ("llama-125m llama-1b"), TYPES ("f16 q8_0 q4_k_m"), BATCHES ("1 8 32"),
# ROUNDS (3), PROMPT (32), STEPS (16), THREADS (nproc), LOOM_QUANT_CONFIG (the none plugin's
# config for f16 files, "{}"). Prints one markdown table (the CPU's ISA and read bandwidth on top);
# JSON per run lands in BUILD_DIR/bench-results/batched-decode. Needs the peer's binaries
# (tools/peers/build-llama-cpp.sh, built on first use: long).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
presets="${PRESETS:-llama-125m llama-1b}"
types="${TYPES:-f16 q8_0 q4_k_m}"
batches="${BATCHES:-1 8 32}"
rounds="${ROUNDS:-3}" prompt="${PROMPT:-32}" steps="${STEPS:-16}" threads="${THREADS:-$(nproc)}"
none_config="${LOOM_QUANT_CONFIG:-{\}}"
out="$build/bench-results/batched-decode"
models="$build/bench-models"
mkdir -p "$out" "$models"
rm -f "$out"/*.json "$out"/*.jsonl
llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"
source "$root/tools/bench/bench_models.sh"
csv() { tr ' ' ',' <<<"$1"; }
largest=0
for b in $batches; do (( b > largest )) && largest=$b; done
ctx=$(( largest * (prompt + steps + 1) + 256 ))

# The header: ISA and read bandwidth, from a short Loom run that measures it.
isa=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')
bandwidth=$("$bin/loom-bench" model -m "$(bench_model "${presets%% *}" f16)" -t "$threads" -p "" -n "" -b "" -r 1 2>&1 |
  grep -o -E 'bandwidth[^:]*: [0-9.]+ GB/s' | grep -o -E '[0-9.]+ GB/s' || echo "unmeasured")

for preset in $presets; do
  for t in $types; do
    file="$(bench_model "$preset" "$t")"
    quant=gguf config='{}'
    [[ "$t" == f16 ]] && quant=none config="$none_config"
    for r in $(seq 1 "$rounds"); do
      loom() {
        "$bin/loom-bench" model -m "$file" -t "$threads" --quantization "$quant" --quantization-config "$config" \
          --kv-dtype f16 -p "" -n "" -b "$(csv "$batches")" --batched-prompt "$prompt" --batched-steps "$steps" \
          -r 1 --no-stream --json "$out/$preset-$t-loom-$r.json" >/dev/null 2>&1
      }
      peer() {
        "$llama_bin/llama-batched-bench" -m "$file" -t "$threads" -tb "$threads" -c "$ctx" -npp "$prompt" \
          -ntg "$steps" -npl "$(csv "$batches")" -fa on --output-format jsonl 2>/dev/null |
          grep '^{' >"$out/$preset-$t-llama-$r.jsonl"
      }
      echo "== $preset $t round $r" >&2
      if (( r % 2 == 1 )); then loom; peer; else peer; loom; fi
    done
  done
done

python3 - "$out" "$rounds" "$presets" "$types" "$batches" "$threads" "$isa" "$bandwidth" "$none_config" <<'PY'
import json, statistics, sys
out, rounds, presets, types, batches, threads, isa, bandwidth, none_config = sys.argv[1:]
rounds = int(rounds)
print(f"Batched decode, {threads} threads, CPU flags: {isa.strip()}; read bandwidth {bandwidth}; "
      f"f16 files on quantization none {none_config}.")
print()
print("| model | type | B | Loom tok/s | llama.cpp S_TG tok/s | Loom / llama.cpp | per round |")
print("|---|---|---|---|---|---|---|")
for preset in presets.split():
    for t in types.split():
        for b in map(int, batches.split()):
            loom, peer, ratios = [], [], []
            for r in range(1, rounds + 1):
                d = json.load(open(f"{out}/{preset}-{t}-loom-{r}.json"))
                lt = next(x["avg_ts"] for x in d["batched"]["rows"] if x["seqs"] == b)
                pt = next(json.loads(line)["speed_tg"] for line in open(f"{out}/{preset}-{t}-llama-{r}.jsonl")
                          if json.loads(line)["pl"] == b)
                loom.append(lt); peer.append(pt); ratios.append(lt / pt)
            print(f"| {preset} | {t} | {b} | {statistics.median(loom):.1f} | {statistics.median(peer):.1f} | "
                  f"**{statistics.median(ratios):.2f}x** | {' / '.join(f'{x:.2f}' for x in ratios)} |")
PY
