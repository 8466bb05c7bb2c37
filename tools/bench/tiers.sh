#!/usr/bin/env bash
# KV tiers under a working set 4x the KV pool: shared-prefix requests (G system prompts of P
# tokens, sent round-robin, one at a time, so with an LRU pool each prompt's prefix was evicted by
# the time it comes back) against loom-server with no tier, a host-RAM tier, and host + disk (the
# host tier half the working set, so some prefixes come from disk), and against llama.cpp's
# llama-server with its prompt cache (the KV of one slot of the same token capacity, prompt states
# kept in host RAM, --cache-ram, and --cache-reuse). Rounds alternate the order of the engines;
# the tables give medians over rounds. Reports TTFT p50/p99 and the prefill tokens each engine
# computed (Loom: prompt tokens - pool prefix hits - tokens restored from a tier; llama-server:
# its prompt_tokens_total, which counts only the tokens it evaluated). Then the time to first hit
# after a restart: Loom host+disk restarted on the same disk folder, and llama-server restarted
# (its prompt cache lives in RAM), each sent the first prompt of the run again.
#
# WORKLOAD=multi-turn instead runs C conversations of T turns (each turn U new tokens and an
# answer of A), one request at a time, the conversations taking turns, so each comes back after
# the others have pushed its history out of the pool (the working set, C x T x (U + A) tokens, is
# again 4x the pool); no restart measurement there.
#
#   tools/bench/tiers.sh [BUILD_DIR]
# Env: WORKLOAD (shared-prefix | multi-turn), ROUNDS (3); shared-prefix: NUM_GROUPS (8),
# PREFIX_LEN (512), SUFFIX_LEN (64), OUTPUT_LEN (16), PROMPTS (32); multi-turn: CONVERSATIONS
# (16), TURNS (4), TURN_LEN (128), ANSWER_LEN (64); THREADS (nproc), PRESET (llama-125m), PORT (18470), ENGINES (the Loom runs: "none host
# host_disk"; host_disk needs host before it), PEER (1: include llama-server, built by
# tools/peers/build-llama-cpp.sh on first use). Writes BUILD_DIR/bench-results/tiers/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
workload="${WORKLOAD:-shared-prefix}"
out="$build/bench-results/tiers"
[[ "$workload" == shared-prefix ]] || out="$build/bench-results/tiers-$workload"
rounds="${ROUNDS:-3}"
groups="${NUM_GROUPS:-8}"
prefix_len="${PREFIX_LEN:-512}"
suffix_len="${SUFFIX_LEN:-64}"
output_len="${OUTPUT_LEN:-16}"
prompts="${PROMPTS:-32}"
threads="${THREADS:-$(nproc)}"
preset="${PRESET:-llama-125m}"
port="${PORT:-18470}"
peer="${PEER:-1}"
conversations="${CONVERSATIONS:-16}"
turns="${TURNS:-4}"
turn_len="${TURN_LEN:-128}"
answer_len="${ANSWER_LEN:-64}"
block_size=16
mkdir -p "$out"
rm -rf "${out:?}"/*.json "$out"/*.txt "$out"/*.metrics "$out"/*.log "$out/disk"

model="$build/bench-models/$preset-f16.gguf"
mkdir -p "$(dirname "$model")"
[[ -f "$model" ]] || "$bin/loom-convert" --random --preset "$preset" --dtype f16 \
  --vocab-from "$root/tests/data/vocab/ggml-vocab-llama-spm.gguf" -o "$model" >&2
llama_bin=""
[[ "$peer" == 1 ]] && llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"

# The pool holds a quarter of the working set (groups x prefix_len tokens), plus room for the
# request in flight's suffix, BOS and output. llama-server gets the same number of KV tokens.
if [[ "$workload" == shared-prefix ]]; then
  working_set=$(( groups * prefix_len ))
  dataset=(--dataset-name shared-prefix --num-groups "$groups" --prefix-len "$prefix_len" --suffix-len "$suffix_len"
           --output-len "$output_len")
  pool_blocks=$(( (working_set / 4 + suffix_len + output_len + 1 + block_size - 1) / block_size ))  # + 1: BOS
else
  working_set=$(( conversations * turns * (turn_len + answer_len) ))
  dataset=(--dataset-name multi-turn --num-turns "$turns" --random-input-len "$turn_len" --random-output-len "$answer_len"
)
  prompts="$conversations"
  # The last turn carries the whole conversation (and a newline between turns) and its answer.
  pool_blocks=$(( (working_set / 4 + turns * 2 + answer_len + 1 + block_size - 1) / block_size ))
fi
pool_tokens=$(( pool_blocks * block_size ))

source "$root/tools/bench/one_server.sh"

start_loom() {  # start_loom NAME TIERS_TOML
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
  "$bin/loom-server" --config "$out/$1.toml" >>"$out/$1.log" 2>&1 &
  server_pid=$!
  wait_up "loom-server ($1)" "$out/$1.log"
}

start_llama() {
  # One slot (the client sends one request at a time) with the pool's token capacity; the prompt
  # cache (on by default) keeps the states of earlier prompts in up to --cache-ram MiB of host RAM
  # and restores the longest matching one; --cache-reuse also reuses shifted chunks.
  "$llama_bin/llama-server" -m "$model" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
    -np 1 -c "$pool_tokens" --cache-ram 8192 --cache-reuse 256 --metrics --no-webui >>"$out/llama.log" 2>&1 &
  server_pid=$!
  wait_up llama-server "$out/llama.log"
}

metric() {  # metric NAME_AND_LABELS: the value of one series of /metrics (0 when absent)
  curl -sf "http://127.0.0.1:$port/metrics" | awk -v m="$1" 'index($0, m) == 1 { v = $NF } END { print v + 0 }'
}

bench() {  # bench JSON [PROMPTS]: the shared-prefix workload, one request at a time
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" "${dataset[@]}" \
    --num-prompts "${2:-$prompts}" --max-concurrency 1 --seed 1 --json "$1" >"${1%.json}.txt"
}

record() {  # record NAME ROUND COMPUTED: one line of raw results (ttft p50, p99, prefill computed)
  python3 - "$out/$1.r$2.json" "$1" "$2" "$3" >>"$out/raw.txt" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))["summary"]
assert s["failed"] == 0, f"{sys.argv[2]}: {s['failed']} requests failed"
print(sys.argv[2], sys.argv[3], f"{s['ttft_ms']['median']:.1f}", f"{s['ttft_ms']['p99']:.1f}", sys.argv[4])
PY
}

run_loom() {  # run_loom NAME ROUND TIERS_TOML
  echo "== round $2: $1 ($workload, working set $working_set tokens, pool $pool_blocks blocks)" >&2
  [[ "$1" == host_disk ]] && rm -rf "$out/disk"
  start_loom "$1" "$3"
  bench "$out/$1.r$2.json"
  local prompt hits restored
  prompt="$(metric "loom:prompt_tokens_total{model_name=\"$preset\"}")"
  hits="$(metric "loom:prefix_cache_hits_total{model_name=\"$preset\"}")"
  restored="$(metric "loom:prefix_cache_misses_total{model_name=\"$preset\",reason=\"lower_tier\"}")"
  record "$1" "$2" "$(python3 -c "print(int($prompt - $hits - $restored))")"
  curl -sf "http://127.0.0.1:$port/metrics" | grep -E 'kv_tier_|lower_tier' >"$out/$1.metrics" || true
  stop_server   # a graceful stop: host_disk spills its pool and host tier to the disk folder
  if [[ "$1" == host_disk && "$workload" == shared-prefix ]]; then
    start_loom "$1" "$3"
    bench "$out/restart_loom.r$2.json" 1
    stop_server
  fi
}

run_llama() {  # run_llama ROUND
  echo "== round $1: llama-server" >&2
  start_llama
  bench "$out/llama.r$1.json"
  record llama "$1" "$(metric "llamacpp:prompt_tokens_total")"
  stop_server
  [[ "$workload" == shared-prefix ]] || return 0
  start_llama
  bench "$out/restart_llama.r$1.json" 1
  stop_server
}

host_toml="[cache_offload]
plugin = \"host\"
capacity = \"4GiB\""
host_disk_toml=""
read -r -a engines <<<"${ENGINES:-none host host_disk}"
[[ "$peer" == 1 ]] && engines+=(llama)
for r in $(seq 1 "$rounds"); do
  order=("${engines[@]}")
  # Odd rounds in the listed order, even rounds reversed (the host run of round 1 sizes the
  # host+disk chain, so round 1 keeps the listed order).
  if (( r % 2 == 0 )); then order=(); for (( i=${#engines[@]}-1; i>=0; i-- )); do order+=("${engines[i]}"); done; fi
  for e in "${order[@]}"; do
    case "$e" in
      none) run_loom none "$r" "" ;;
      host)
        run_loom host "$r" "$host_toml"
        if [[ -z "$host_disk_toml" ]]; then
          # One block's bytes, from what the host tier moved; the host tier then holds about half
          # the working set and the disk the rest.
          bytes_in="$(awk '/^loom:kv_tier_bytes_in_total/ { print $NF }' "$out/host.metrics")"
          blocks_in="$(awk '/^loom:kv_tier_blocks_in_total/ { print $NF }' "$out/host.metrics")"
          bytes_per_block=$(( ${bytes_in%.*} / (${blocks_in%.*} > 0 ? ${blocks_in%.*} : 1) ))
          host_blocks=$(( working_set / 2 / block_size ))
          host_disk_toml="[cache_offload]
plugin = \"host\"
capacity = $(( host_blocks * bytes_per_block ))
[cache_offload.next]
plugin = \"disk\"
dir = \"$out/disk\"
capacity = \"8GiB\""
        fi ;;
      host_disk) run_loom host_disk "$r" "$host_disk_toml" ;;
      llama) run_llama "$r" ;;
    esac
  done
done

python3 - "$out" "$rounds" <<'PY' | tee "$out/summary.txt"
import json, statistics, sys
out, rounds = sys.argv[1], int(sys.argv[2])
rows = {}
for line in open(f"{out}/raw.txt"):
    name, r, p50, p99, computed = line.split()
    rows.setdefault(name, []).append((float(p50), float(p99), float(computed)))
labels = {"none": "Loom, no tier", "host": "Loom, host", "host_disk": "Loom, host + disk",
          "llama": "llama-server, prompt cache in RAM"}
print(f"Medians of {rounds} rounds, engines alternating.\n")
print("| engine | TTFT p50 (ms) | TTFT p99 (ms) | prefill tokens computed | TTFT p50 / no tier | per-round p50 |")
print("|---|---|---|---|---|---|")
base = statistics.median(v[0] for v in rows["none"]) if "none" in rows else float("nan")
for name in ("none", "host", "host_disk", "llama"):
    if name not in rows: continue
    v = rows[name]
    p50 = statistics.median(x[0] for x in v)
    print(f"| {labels[name]} | {p50:.0f} | {statistics.median(x[1] for x in v):.0f} | "
          f"{statistics.median(x[2] for x in v):.0f} | {p50 / base:.2f}x | "
          f"{' / '.join(f'{x[0]:.0f}' for x in v)} |")
def first_ttft(prefix):
    t = []
    for r in range(1, rounds + 1):
        try: t.append(json.load(open(f"{out}/{prefix}.r{r}.json"))["requests"][0]["ttft_ms"])
        except (OSError, KeyError, IndexError): pass
    return t
restarts = [(label, first_ttft(prefix)) for prefix, label in
            (("restart_loom", "Loom, host + disk (disk folder kept)"), ("restart_llama", "llama-server (prompt cache in RAM)"))]
if any(t for _, t in restarts):
    print("\nFirst request after a restart (the run's first prompt again):\n")
    print("| engine | TTFT (ms), median | per round |")
    print("|---|---|---|")
    for label, t in restarts:
        if t: print(f"| {label} | {statistics.median(t):.0f} | {' / '.join(f'{x:.0f}' for x in t)} |")
PY
