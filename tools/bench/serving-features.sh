#!/usr/bin/env bash
# The engine-heart benchmarks, each a side-by-side run on one model in one go (ratios hold on a
# noisy machine where absolute numbers drift):
#   1. prefix reuse   - TTFT of requests sharing a 1,024-token prefix, prefix caching on vs off
#   2. batching       - generated tokens/s at 32 concurrent streams vs 1 stream
#   3. scheduling     - `continuous` vs `static` on mixed-length requests: tokens/s and p99 TTFT
# Model: a random-weight llama-125m (f32) made by loom-convert with the Llama 2 tokenizer.
#
#   tools/bench/serving-features.sh [BUILD_DIR]       (THREADS=n to pin the thread count,
#                                                      KV_DTYPE=f16|bf16|int8|fp8_e4m3 for the KV pool)
# Prints a summary; every loom-bench JSON lands in BUILD_DIR/bench-results/serving-features/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/serving-features"
threads="${THREADS:-$(nproc)}"
kv_dtype="${KV_DTYPE:-f32}"
port="${PORT:-18480}"
mkdir -p "$out" "$build/bench-models"
model="$build/bench-models/llama-125m-f32.gguf"
vocab="$root/tests/data/vocab/ggml-vocab-llama-spm.gguf"
[[ -f "$model" ]] || "$bin/loom-convert" --random --preset llama-125m --dtype f32 --vocab-from "$vocab" -o "$model"

server_pid=""
stop_server() { [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; server_pid=""; }
trap stop_server EXIT

# start_server NAME "<[scheduler] and [cache] tables>" (the [cache] table last: kv_dtype joins it)
start_server() {
  local name="$1" tables="$2" cfg="$out/$1.toml"
  cat >"$cfg" <<TOML
[model]
path = "$model"
name = "llama-125m"
[server]
host = "127.0.0.1"
port = $port
[runtime]
threads = $threads
[logging]
level = "warn"
[attention]
plugin = "flash_cpu"
$tables
kv_dtype = "$kv_dtype"
TOML
  "$bin/loom-server" --config "$cfg" >"$out/$name.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/$name.server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "serving-features: $name did not start" >&2; exit 1
}

seed=1
bench() {  # bench NAME loom-bench-serve-args...
  # A fresh --seed per run: runs on the same server never share prompts (no accidental prefix
  # hits). Within the prefix-reuse runs the shared prefix is the point, and it comes from the
  # workload itself.
  local name="$1"; shift
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" --seed "$((seed++))" \
    --json "$out/$name.json" "$@" >"$out/$name.txt"
}

metric() {  # metric NAME -> its value (lines look like `name{model_name="..."} value`)
  curl -s "http://127.0.0.1:$port/metrics" | awk -v m="$1" '$1 == m || index($1, m "{") == 1 {print $2}'
}

# 1. Prefix reuse: one warm-up request writes the shared 1,024-token prefix; the measured
# requests (one at a time) share it and differ in a 32-token suffix.
prefix_args=(--dataset-name shared-prefix --num-groups 1 --prefix-len 1024 --suffix-len 32
             --output-len 4 --num-prompts 8 --max-concurrency 1 --num-warmups 1)
for caching in true false; do
  start_server "prefix-$caching" "[scheduler]
plugin = \"continuous\"
[cache]
plugin = \"paged\"
kv_memory = \"1GiB\"
enable_prefix_caching = $caching"
  bench "prefix-$caching" "${prefix_args[@]}"
  echo "prefix caching $caching: hits $(metric 'loom:prefix_cache_hits_total') of $(metric 'loom:prefix_cache_queries_total') tokens" \
    >"$out/prefix-$caching.hits"
  stop_server
done

# 2. Batching: generated tokens/s of 32 concurrent streams against one stream, on a
# generation-heavy workload (32-token prompts, 256 new tokens: mostly decode) and on 128 in /
# 128 out (prefill is then a large share of the work, for a single stream too).
start_server "batching" "[scheduler]
plugin = \"continuous\"
max_num_seqs = 64
[cache]
plugin = \"paged\"
kv_memory = \"2GiB\""
for shape in "32 256" "128 128"; do
  read -r in_len out_len <<<"$shape"
  bench "streams-1-$in_len-$out_len" --dataset-name random --random-input-len "$in_len" \
    --random-output-len "$out_len" --num-prompts 4 --max-concurrency 1 --num-warmups 1
  bench "streams-32-$in_len-$out_len" --dataset-name random --random-input-len "$in_len" \
    --random-output-len "$out_len" --num-prompts 32 --max-concurrency 32 --num-warmups 1
done
stop_server

# 3. Scheduling: mixed lengths (inputs 32..512, outputs 16..256) arriving as a Poisson stream
# at about what the machine can sustain.
mixed_args=(--dataset-name random --random-input-len 272 --random-output-len 136
            --random-range-ratio 0.88 --num-prompts 48 --request-rate 1 --max-concurrency 64)
for sched in continuous static; do
  start_server "sched-$sched" "[scheduler]
plugin = \"$sched\"
max_num_seqs = 32
[cache]
plugin = \"paged\"
kv_memory = \"2GiB\""
  bench "sched-$sched" "${mixed_args[@]}"
  stop_server
done

python3 - "$out" "$threads" "$kv_dtype" <<'PY'
import json, sys
out, threads, kv_dtype = sys.argv[1], sys.argv[2], sys.argv[3]
s = lambda n: json.load(open(f"{out}/{n}.json"))["summary"]
on, off = s("prefix-true"), s("prefix-false")
print(f"llama-125m f32 random weights, {threads} threads, KV {kv_dtype}; JSON in {out}")
print(f"1. prefix reuse (1,024-token shared prefix): mean TTFT {on['ttft_ms']['mean']:.1f} ms with prefix caching, "
      f"{off['ttft_ms']['mean']:.1f} ms without -> {off['ttft_ms']['mean'] / on['ttft_ms']['mean']:.1f}x")
for c in ("true", "false"):
    print("   " + open(f"{out}/prefix-{c}.hits").read().strip())
for shape in ("32-256", "128-128"):
    one, many = s(f"streams-1-{shape}"), s(f"streams-32-{shape}")
    print(f"2. batching, random {shape.replace('-', ' in / ')} out: {one['output_throughput']:.1f} tok/s at 1 stream, "
          f"{many['output_throughput']:.1f} tok/s at 32 -> {many['output_throughput'] / one['output_throughput']:.1f}x")
c, st = s("sched-continuous"), s("sched-static")
print(f"3. scheduling (mixed lengths, 1 req/s): continuous {c['output_throughput']:.1f} tok/s, p99 TTFT "
      f"{c['ttft_ms']['p99']:.0f} ms; static {st['output_throughput']:.1f} tok/s, p99 TTFT {st['ttft_ms']['p99']:.0f} ms")
PY
