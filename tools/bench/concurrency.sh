#!/usr/bin/env bash
# Serving at fixed concurrency: loom-server in its default configuration (continuous batching,
# paged cache, flash_cpu; only the model, the threads and an f16 KV pool are given) against
# llama.cpp's own llama-server (continuous batching, -np = the concurrency, the same threads, f16
# KV), random prompts, the same client (loom-bench serve), a fresh server for every run, rounds
# alternating which engine goes first. Prints output tok/s, TPOT p50/p99, ITL p99 and TTFT
# p50/p99 per engine and concurrency (medians over rounds) and Loom / llama-server ratios.
#
#   tools/bench/concurrency.sh [BUILD_DIR]
# Env: CONCURRENCY ("1 8 32"), ROUNDS (3), PROMPTS (48), INPUT_LEN (256), OUTPUT_LEN (64),
# THREADS (nproc), PRESET (llama-125m), DTYPE (f16), PORT (18490), LOOM_ARGS (more loom-server
# arguments, e.g. "--config FILE" to measure another configuration; LOOM_LABEL names it). Writes
# BUILD_DIR/bench-results/concurrency/. Needs the peer (tools/peers/build-llama-cpp.sh).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/concurrency"
levels="${CONCURRENCY:-1 8 32}"
rounds="${ROUNDS:-3}"
prompts="${PROMPTS:-48}"
input_len="${INPUT_LEN:-256}"
output_len="${OUTPUT_LEN:-64}"
threads="${THREADS:-$(nproc)}"
preset="${PRESET:-llama-125m}" dtype="${DTYPE:-f16}"
port="${PORT:-18490}"
mkdir -p "$out" "$build/bench-models"
rm -f "$out"/*.json "$out"/*.log

model="$build/bench-models/$preset-$dtype.gguf"
[[ -f "$model" ]] || "$bin/loom-convert" --random --preset "$preset" --dtype "$dtype" \
  --vocab-from "$root/tests/data/vocab/ggml-vocab-llama-spm.gguf" -o "$model" >&2
llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"

source "$root/tools/bench/one_server.sh"

run() {  # run ENGINE CONCURRENCY ROUND
  local log="$out/$1-c$2-r$3.log"
  if [[ "$1" == loom ]]; then
    # shellcheck disable=SC2086 # LOOM_ARGS is split into arguments on purpose
    "$bin/loom-server" --model "$model" --port "$port" -t "$threads" --kv-dtype f16 ${LOOM_ARGS:-} >"$log" 2>&1 &
  else
    # One slot per client, each with room for a whole request (prompt + output, rounded up).
    "$llama_bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
      -np "$2" -c $(( $2 * ((input_len + output_len + 64 + 255) / 256 * 256) )) -cb --no-webui >"$log" 2>&1 &
  fi
  server_pid=$!
  wait_up "$1" "$log"
  echo "== round $3, concurrency $2: $1" >&2
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" \
    --random-input-len "$input_len" --random-output-len "$output_len" --num-prompts "$prompts" \
    --max-concurrency "$2" --seed "$3" --json "$out/$1-c$2-r$3.json" >/dev/null
  stop_server
}

for r in $(seq 1 "$rounds"); do
  for c in $levels; do
    if (( r % 2 == 1 )); then run loom "$c" "$r"; run llama "$c" "$r"; else run llama "$c" "$r"; run loom "$c" "$r"; fi
  done
done

BENCH_DIR="$root/tools/bench" python3 - "$out" "$rounds" "$levels" <<'PY' | tee "$out/summary.txt"
import os, sys
out, rounds, levels = sys.argv[1], int(sys.argv[2]), sys.argv[3].split()
sys.path.insert(0, os.environ["BENCH_DIR"])
from serve_medians import load as load_runs
load = lambda engine, c: load_runs(out, engine, c, rounds)
print(f"Medians of {rounds} rounds, engines alternating, a fresh server per run.\n")
print("| concurrency | engine | output tok/s | TPOT p50 / p99 ms | ITL p99 ms | TTFT p50 / p99 ms | tok/s per round |")
print("|---|---|---|---|---|---|---|")
for c in levels:
    rows = {e: load(e, c) for e in ("loom", "llama")}
    for e, label in (("loom", os.environ.get("LOOM_LABEL", "Loom (default config)")), ("llama", "llama-server")):
        m = rows[e]
        print(f"| {c} | {label} | {m['tok/s']:.1f} | {m['tpot50']:.1f} / {m['tpot99']:.1f} | {m['itl99']:.0f} | "
              f"{m['ttft50']:.0f} / {m['ttft99']:.0f} | {' / '.join(f'{x:.1f}' for x in m['per_round'])} |")
    l, p = rows["loom"], rows["llama"]
    print(f"| {c} | Loom / llama-server | **{l['tok/s'] / p['tok/s']:.2f}x** | {l['tpot99'] / p['tpot99']:.2f}x (p99) | "
          f"{l['itl99'] / p['itl99']:.2f}x | {l['ttft99'] / p['ttft99']:.2f}x (p99) | |")
PY
