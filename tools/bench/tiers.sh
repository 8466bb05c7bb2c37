#!/usr/bin/env bash
# KV tiers under a working set 4x the KV pool: shared-prefix requests (G system prompts of P
# tokens, sent round-robin, so with an LRU pool each prompt's prefix was evicted by the time it
# comes back) against loom-server with no tier, a host-RAM tier, and host + disk (the host tier
# half the working set, so some prefixes come from disk). Reports TTFT p50/p99 and the prefill
# tokens the model computed (prompt tokens - prefix-cache hits - tokens restored from a tier).
#
#   tools/bench/tiers.sh [BUILD_DIR]
# Env: NUM_GROUPS (8), PREFIX_LEN (512), SUFFIX_LEN (64), OUTPUT_LEN (16), PROMPTS (32), THREADS
# (nproc), PRESET (llama-125m), PORT (18470). Writes BUILD_DIR/bench-results/tiers/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/tiers"
groups="${NUM_GROUPS:-8}"
prefix_len="${PREFIX_LEN:-512}"
suffix_len="${SUFFIX_LEN:-64}"
output_len="${OUTPUT_LEN:-16}"
prompts="${PROMPTS:-32}"
threads="${THREADS:-$(nproc)}"
preset="${PRESET:-llama-125m}"
port="${PORT:-18470}"
block_size=16
mkdir -p "$out"
rm -rf "$out"/*.json "$out"/*.txt "$out/disk"

model="$build/bench-models/$preset-f16.gguf"
mkdir -p "$(dirname "$model")"
[[ -f "$model" ]] || "$bin/loom-convert" --random --preset "$preset" --dtype f16 \
  --vocab-from "$root/tests/data/vocab/ggml-vocab-llama-spm.gguf" -o "$model" >&2

# The pool holds a quarter of the working set (groups x prefix_len tokens), plus room for the
# request in flight's suffix and output.
working_set=$(( groups * prefix_len ))
pool_blocks=$(( (working_set / 4 + suffix_len + output_len + block_size - 1) / block_size ))

server_pid=""
stop_server() { if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; server_pid=""; }
trap stop_server EXIT

start_server() {  # start_server NAME TIERS_TOML
  cat >"$out/$1.toml" <<TOML
[model]
path = "$model"
name = "$preset"
[server]
host = "127.0.0.1"
port = $port
[runtime]
threads = $threads
[logging]
level = "warn"
[attention]
plugin = "flash_cpu"
[scheduler]
plugin = "continuous"
max_num_seqs = 8
[cache]
plugin = "paged"
num_blocks = $pool_blocks
block_size = $block_size
$2
TOML
  "$bin/loom-server" --config "$out/$1.toml" >"$out/$1.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 600); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "tiers: loom-server ($1) did not start" >&2; cat "$out/$1.log" >&2; exit 1
}

metric() {  # metric NAME_AND_LABELS: the value of one series of /metrics (0 when absent)
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" 'index($0, m) == 1 { v = $NF } END { print v + 0 }'
}

run() {  # run NAME TIERS_TOML
  start_server "$1" "$2"
  echo "== $1: $prompts prompts, $groups groups x $prefix_len prefix tokens, pool $pool_blocks blocks" >&2
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" \
    --dataset-name shared-prefix --num-groups "$groups" --prefix-len "$prefix_len" --suffix-len "$suffix_len" \
    --output-len "$output_len" --num-prompts "$prompts" --max-concurrency 1 --seed 1 \
    --json "$out/$1.json" >"$out/$1.txt"
  local name="loom:prompt_tokens_total{model_name=\"$preset\"}"
  local prompt hits restored
  prompt="$(metric "$name")"
  hits="$(metric "loom:prefix_cache_hits_total{model_name=\"$preset\"}")"
  restored="$(metric "loom:prefix_cache_misses_total{model_name=\"$preset\",reason=\"lower_tier\"}")"
  python3 - "$out/$1.json" "$1" "$prompt" "$hits" "$restored" >>"$out/summary.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
t = s["ttft_ms"]
prompt, hits, restored = (float(x) for x in sys.argv[3:6])
print(f"| {sys.argv[2]} | {t['median']:.0f} | {t['p99']:.0f} | {prompt - hits - restored:.0f} | {hits:.0f} | {restored:.0f} |")
PY
  curl -sf "http://127.0.0.1:$port/metrics" | grep -E 'kv_tier_|lower_tier' >"$out/$1.metrics" || true
  stop_server
}

echo "| tiers | TTFT p50 (ms) | TTFT p99 (ms) | prefill tokens computed | pool prefix hits | restored from a tier |" >"$out/summary.txt"
echo "|---|---|---|---|---|---|" >>"$out/summary.txt"
run none ""
run host "[cache_offload]
plugin = \"host\"
capacity = \"4GiB\""
# One block's bytes, from what the host tier moved; the host tier then holds about half the
# working set and the disk the rest.
bytes_in="$(awk '/^loom:kv_tier_bytes_in_total/ { print $NF }' "$out/host.metrics")"
blocks_in="$(awk '/^loom:kv_tier_blocks_in_total/ { print $NF }' "$out/host.metrics")"
bytes_per_block=$(( ${bytes_in%.*} / (${blocks_in%.*} > 0 ? ${blocks_in%.*} : 1) ))
host_blocks=$(( working_set / 2 / block_size ))
run host_disk "[cache_offload]
plugin = \"host\"
capacity = $(( host_blocks * bytes_per_block ))
[cache_offload.next]
plugin = \"disk\"
dir = \"$out/disk\"
capacity = \"8GiB\""
cat "$out/summary.txt"
