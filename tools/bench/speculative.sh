#!/usr/bin/env bash
# Batch-1 decode tokens/s with speculative decoding off vs on (ngram, suffix), on one model in one
# go, with an input-grounded prompt (a long given text the request is asked to continue/repeat).
# Greedy, so every run produces the same tokens (checked); the figure is completion tokens over
# the request's wall time, the best of RUNS runs.
#
#   tools/bench/speculative.sh [BUILD_DIR]    MODEL=<gguf> (default: the demo model stories260K)
#                                             THREADS=n RUNS=n MAX_TOKENS=n TEXT_BYTES=n K=n PORT=n NGRAM_MIN=n
# Prints one line per configuration: tokens/s, speedup over off, acceptance and mean accepted
# length from /metrics. Results (JSON bodies, server logs) land in BUILD_DIR/bench-results/speculative/.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/speculative"
model="${MODEL:-$root/tests/data/stories260K.gguf}"
threads="${THREADS:-2}"
runs="${RUNS:-3}"
max_tokens="${MAX_TOKENS:-150}"
text_bytes="${TEXT_BYTES:-450}"  # the given text; prompt + max_tokens must fit the context (512 for the demo model)
k="${K:-4}"
port="${PORT:-18240}"
ngram_min="${NGRAM_MIN:-1}"  # ngram's prompt_lookup_min (min_n)
mkdir -p "$out"

server_pid=""
stop_server() { [[ -n "$server_pid" ]] && kill "$server_pid" 2>/dev/null && wait "$server_pid" 2>/dev/null; server_pid=""; }
trap stop_server EXIT

start_server() {  # start_server NAME [loom-server args...]
  local name="$1"; shift
  "$bin/loom-server" "$model" --host 127.0.0.1 --port "$port" -t "$threads" --log-level warn "$@" \
    >"$out/$name.server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && return 0
    kill -0 "$server_pid" 2>/dev/null || { cat "$out/$name.server.log" >&2; exit 1; }
    sleep 0.2
  done
  echo "speculative: $name did not start" >&2; exit 1
}

# The input-grounded prompt: a given story, twice (the second copy cut short), so the model's
# greedy continuation copies from its input, as a summary/rewrite/extraction of a long text does.
text="$(head -c "$text_bytes" "$root/tests/data/heldout_stories.txt" | tr '\n' ' ')"
prompt="$text $(printf '%s' "$text" | head -c $((text_bytes / 3)))"
body="$(python3 -c 'import json,sys; print(json.dumps({"prompt": sys.argv[1], "max_tokens": int(sys.argv[2]), "temperature": 0, "ignore_eos": True}))' "$prompt" "$max_tokens")"

measure() {  # measure NAME -> best tokens/s, and the completion text in $out/NAME.json
  local name="$1" best=0
  for _ in $(seq 1 "$runs"); do
    local t0 t1 n
    t0=$(date +%s.%N)
    curl -sf "http://127.0.0.1:$port/v1/completions" -H 'Content-Type: application/json' -d "$body" >"$out/$name.json"
    t1=$(date +%s.%N)
    n=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["usage"]["completion_tokens"])' "$out/$name.json")
    best=$(python3 -c "print(max($best, $n / ($t1 - $t0)))")
  done
  echo "$best"
}

metric() { curl -sf "http://127.0.0.1:$port/metrics" | grep -E "^loom:$1[{ ]" | head -1 | awk '{print $NF}'; }

start_server off
off=$(measure off)
stop_server
printf '%-8s %8.1f tok/s\n' off "$off"
for method in ngram suffix; do
  extra=""
  [[ "$method" == ngram ]] && extra=", \"prompt_lookup_min\": $ngram_min"
  start_server "$method" --speculative-config "{\"method\": \"$method\", \"num_speculative_tokens\": $k$extra}"
  on=$(measure "$method")
  drafts=$(metric spec_decode_num_draft_tokens_total); accepted=$(metric spec_decode_num_accepted_tokens_total)
  mean=$(metric spec_decode_mean_accepted_length)
  stop_server
  cmp -s <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$out/off.json") \
         <(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["choices"][0]["text"])' "$out/$method.json") \
    || { echo "speculative: $method changed the greedy output" >&2; exit 1; }
  python3 -c "import sys; on, off, d, a, m = map(float, sys.argv[1:6]); print(f'{sys.argv[6]:<8} {on:8.1f} tok/s  {on/off:5.2f}x  acceptance {a/max(d,1):.2f}  mean accepted length {m:.2f}')" \
    "$on" "$off" "${drafts:-0}" "${accepted:-0}" "${mean:-0}" "$method"
done
