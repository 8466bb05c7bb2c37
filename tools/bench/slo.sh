#!/usr/bin/env bash
# Mixed-load SLO benchmark: an interactive class (short prompts, tight TPOT) beside a batch class
# (long prompts, loose SLO), Poisson arrivals from 0.5x to 2x the measured capacity, against
# Loom with the `slo` scheduler, Loom with `continuous` (the default config) and llama.cpp's own
# llama-server (continuous batching, -np slots), all three up at once on their own ports and
# measured in alternating order round after round with the same client (loom-bench serve).
# Writes BUILD_DIR/bench-results/slo/*.json and the "SLO-aware serving" section of
# docs/benchmarks.md (medians over rounds; plots under docs/benchmarks/ when matplotlib is there).
#
#   tools/bench/slo.sh [BUILD_DIR]
# Environment: ROUNDS (3), RATES ("0.5 1 1.5 2", times capacity), PROMPTS per run (48), THREADS
# (nproc), SLOTS for llama-server -np (16), INTERACTIVE and BATCH class specs
# (NAME:SHARE:INPUT:OUTPUT:PRIORITY:TTFT_MS:TPOT_MS), PRESET (llama-125m) and DTYPE (f16).
# Needs the build and the peer (tools/peers/build-llama-cpp.sh, built on first use: long).
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/slo"
rounds="${ROUNDS:-3}"
rates="${RATES:-0.5 1 1.5 2}"
prompts="${PROMPTS:-48}"
threads="${THREADS:-$(nproc)}"
slots="${SLOTS:-16}"
interactive="${INTERACTIVE:-interactive:3:64:64:0:1000:60}"
batch="${BATCH:-batch:1:1024:128:10:-:-}"
preset="${PRESET:-llama-125m}" dtype="${DTYPE:-f16}"
mkdir -p "$out" "$build/bench-models"
rm -f "$out"/*.json

model="$build/bench-models/$preset-$dtype.gguf"
[[ -f "$model" ]] || "$bin/loom-convert" --random --preset "$preset" --dtype "$dtype" \
  --vocab-from "$root/tests/data/vocab/ggml-vocab-llama-spm.gguf" -o "$model" >&2
llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"

declare -A port=([slo]=18610 [continuous]=18611 [llama]=18612)
pids=()
stop_all() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done; }
trap stop_all EXIT

wait_up() {  # wait_up ENGINE PID LOG
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:${port[$1]}/v1/models" >/dev/null 2>&1 && return 0
    kill -0 "$2" 2>/dev/null || { echo "slo.sh: $1 exited; see $3" >&2; tail -20 "$3" >&2; exit 1; }
    sleep 0.2
  done
  echo "slo.sh: $1 did not answer; see $3" >&2; exit 1
}

start_loom() {  # start_loom SCHEDULER
  cat >"$out/loom-$1.toml" <<TOML
[model]
path = "$model"
name = "$preset-$dtype"
[server]
host = "127.0.0.1"
port = ${port[$1]}
[runtime]
threads = $threads
[logging]
level = "warn"
[attention]
plugin = "flash_cpu"
[scheduler]
plugin = "$1"
max_num_seqs = 64
[cache]
plugin = "paged"
kv_memory = "2GiB"
enable_prefix_caching = true
TOML
  "$bin/loom-server" --config "$out/loom-$1.toml" >"$out/loom-$1.log" 2>&1 &
  pids+=($!)
  wait_up "$1" "$!" "$out/loom-$1.log"
}
start_llama() {
  "$llama_bin/llama-server" -m "$model" --host 127.0.0.1 --port "${port[llama]}" -t "$threads" -tb "$threads" \
    -np "$slots" -c $(( slots * 2048 )) -cb --no-webui >"$out/llama-server.log" 2>&1 &
  pids+=($!)
  wait_up llama "$!" "$out/llama-server.log"
}
start_loom slo; start_loom continuous; start_llama

bench() {  # bench ENGINE SEED RATE JSON
  local extra=()
  [[ "$1" == llama ]] && extra=(--no-class-fields)
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:${port[$1]}" --tokenizer "$model" --no-ignore-eos \
    --class "$interactive" --class "$batch" --num-prompts "$prompts" --seed "$2" --request-rate "$3" \
    "${extra[@]}" --json "$4" >/dev/null
}

# Capacity: requests/s of the mixed load sent all at once to Loom's default config.
bench continuous 1 inf "$out/capacity.json"
capacity="$(python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['summary']['request_throughput'])" "$out/capacity.json")"
echo "slo.sh: capacity $capacity req/s (mixed load, continuous, all at once)" >&2

engines=(slo continuous llama)
seed=100
for round in $(seq 1 "$rounds"); do
  for factor in $rates; do
    rate="$(python3 -c "print($capacity * $factor)")"
    # The engines take turns, starting one later each round, on the same prompts; each
    # (round, rate) has its own seed, so no server's prefix cache sees a prompt twice.
    seed=$((seed + 1))
    for k in 0 1 2; do
      engine="${engines[$(( (k + round) % 3 ))]}"
      echo "== round $round, ${factor}x capacity ($rate req/s): $engine" >&2
      bench "$engine" "$seed" "$rate" "$out/run-$engine-x$factor-r$round.json"
    done
  done
done

python3 "$root/tools/bench/slo_report.py" "$out" "$root/docs" "$capacity" "$threads" "$slots" "$interactive" "$batch"
