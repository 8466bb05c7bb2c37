#!/usr/bin/env bash
# The head's selection ([runtime] head_top_k, quantization interface 1.5 linear_top_k) in
# serving: loom-server with the default head_top_k = 64 against head_top_k = 0 (every sampled row
# computed whole), same model, same greedy client (loom-bench serve, random prompts of exact
# length), a fresh server per run, the settings alternating round by round. Prints output tok/s
# and TPOT per setting and concurrency (medians over rounds) and each setting's ratio to the last.
# The tokens are the same either way (tests/e2e/test_e2e_head_selection.cpp); what changes is the
# head's arithmetic.
#
#   tools/bench/head-selection.sh MODEL [BUILD_DIR]
# Env: SETTINGS ("64 0"; each one of 64 = the default selection, 0 = whole rows, int8 / bf16 =
# head_top_k 64 with quantization none's head_screen set so), CONCURRENCY ("1 8 32"), ROUNDS
# (3), PROMPTS (48), INPUT_LEN (256), OUTPUT_LEN (64),
# THREADS (nproc), KV_DTYPE (f16), SPECULATOR ("": none; "ngram" adds an n-gram speculator with
# 4 draft tokens, whose greedy verification rows take the selection too), PORT (18493).
# Writes BUILD_DIR/bench-results/head-selection/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="$(realpath "${1:?usage: head-selection.sh MODEL [BUILD_DIR]}")"
build="$(cd "${2:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/head-selection"
levels="${CONCURRENCY:-1 8 32}"
rounds="${ROUNDS:-3}" prompts="${PROMPTS:-48}"
input_len="${INPUT_LEN:-256}" output_len="${OUTPUT_LEN:-64}"
threads="${THREADS:-$(nproc)}"
kv_dtype="${KV_DTYPE:-f16}"
port="${PORT:-18493}"
mkdir -p "$out"
rm -f "$out"/*.json "$out"/*.log "$out"/*.toml

source "$root/tools/bench/one_server.sh"

settings="${SETTINGS:-64 0}"
for k in $settings; do
  case "$k" in
    int8|bf16) printf '[runtime]\nhead_top_k = 64\n[quantization]\nplugin = "none"\nhead_screen = "%s"\n' "$k" ;;
    *) printf '[runtime]\nhead_top_k = %s\n' "$k" ;;
  esac >"$out/k$k.toml"
  if [[ -n "${SPECULATOR:-}" ]]; then
    printf '[speculator]\nplugin = "%s"\nnum_speculative_tokens = 4\n' "$SPECULATOR" >>"$out/k$k.toml"
  fi
done

run() {  # run K CONCURRENCY ROUND
  local log="$out/k$1-c$2-r$3.log"
  "$bin/loom-server" --model "$model" --port "$port" -t "$threads" --kv-dtype "$kv_dtype" \
    --config "$out/k$1.toml" >"$log" 2>&1 &
  server_pid=$!
  wait_up "setting $1" "$log"
  echo "== round $3, concurrency $2: setting $1" >&2
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" \
    --random-input-len "$input_len" --random-output-len "$output_len" --num-prompts "$prompts" \
    --max-concurrency "$2" --seed "$3" --json "$out/k$1-c$2-r$3.json" >/dev/null
  stop_server
}

for r in $(seq 1 "$rounds"); do
  for c in $levels; do
    order=$settings
    (( r % 2 )) || order=$(printf '%s\n' $settings | tac | tr '\n' ' ')
    for k in $order; do run "$k" "$c" "$r"; done
  done
done

isa=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')
BENCH_DIR="$root/tools/bench" python3 - "$out" "$rounds" "$levels" "$threads" "$isa" "$model" "$settings" <<'PY' | tee "$out/summary.txt"
import os, sys
out, rounds, levels, threads, isa, model = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4], sys.argv[5], sys.argv[6]
settings = sys.argv[7].split()
sys.path.insert(0, os.environ["BENCH_DIR"])
from serve_medians import load as load_runs
print(f"{os.path.basename(model)}; {threads} threads, CPU flags: {isa.strip()}. Medians of {rounds} rounds, "
      "settings alternating, a fresh server per run.\n")
print("| concurrency | setting | output tok/s | TPOT p50 / p99 ms | ITL p99 ms | TTFT p50 / p99 ms | tok/s per round |")
print("|---|---|---|---|---|---|---|")
for c in levels:
    rows = {k: load_runs(out, f"k{k}", c, rounds) for k in settings}
    for k, m in rows.items():
        print(f"| {c} | {k} | {m['tok/s']:.1f} | {m['tpot50']:.1f} / {m['tpot99']:.1f} | {m['itl99']:.0f} | "
              f"{m['ttft50']:.0f} / {m['ttft99']:.0f} | {' / '.join(f'{x:.1f}' for x in m['per_round'])} |")
    last = settings[-1]
    for k in settings[:-1]:
        a, b = rows[k], rows[last]
        print(f"| {c} | {k} / {last} | **{a['tok/s'] / b['tok/s']:.2f}x** | {a['tpot50'] / b['tpot50']:.2f}x (p50) | | | |")
PY
