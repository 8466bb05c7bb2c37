#!/usr/bin/env bash
# One command, one report: Loom and llama.cpp (llama-cpp-python) side by side on the same GGUF
# files, thread count and workloads, measured in one go; writes docs/benchmarks.md's results
# section and PNG plots under docs/benchmarks/.
#   1. model level  - pp512 / tg128 tokens/s at 1 and 2 threads (loom-bench model vs the peer's
#                     Python API), for random-weight llama-125m f32 and f16 and llama-1b f16
#   2. serving      - loom-bench serve, random 512-in/128-out, concurrency 1, 8 and 32, then a
#                     request-rate sweep, against loom-server and against the peer's server
#
#   tools/bench/compare.sh [BUILD_DIR]
# Needs the build (tools/setup.sh), python3-venv and network access to PyPI for the peer
# (installed once under BUILD_DIR/peers). Takes about 25 minutes on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/compare"
models_dir="$build/bench-models"
threads_list="${THREADS_LIST:-1 2}"
serve_threads="${SERVE_THREADS:-$(nproc)}"
reps="${REPS:-3}"
mkdir -p "$out" "$models_dir"
rm -f "$out"/*.json

python="$("$root/tools/peers/setup-llama-cpp.sh" "$build")"
"$python" -c "import matplotlib" 2>/dev/null || "$python" -m pip install -q matplotlib >&2

vocab="$root/tests/data/vocab/ggml-vocab-llama-spm.gguf"
make_model() {  # make_model PRESET DTYPE -> path
  local path="$models_dir/$1-$2.gguf"
  [[ -f "$path" ]] || "$bin/loom-convert" --random --preset "$1" --dtype "$2" --vocab-from "$vocab" -o "$path" >&2
  echo "$path"
}

# ---- 1. model level ------------------------------------------------------------------------
model_level() {  # model_level PRESET DTYPE THREADS PP TG REPS
  local model; model="$(make_model "$1" "$2")"
  local tag="$1-$2-t$3"
  echo "== model level: $tag" >&2
  "$bin/loom-bench" model -m "$model" -t "$3" -p "$4" -n "$5" -b "" -r "$6" --json "$out/model-loom-$tag.json" >&2
  "$python" "$root/tools/peers/llama_model_bench.py" "$model" --threads "$3" --pp "$4" --tg "$5" \
    --repetitions "$6" --json "$out/model-llama-$tag.json" >&2
}
for t in $threads_list; do
  model_level llama-125m f32 "$t" 512 128 "$reps"
  model_level llama-125m f16 "$t" 512 128 "$reps"
done
model_level llama-1b f16 "$serve_threads" 512 32 2

# ---- 2. serving ----------------------------------------------------------------------------
serve_model="$(make_model llama-125m f16)"
port=18490
server_pid=""
stop_server() { if [[ -n "$server_pid" ]]; then kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true; fi; server_pid=""; }
trap stop_server EXIT

start_loom() {
  cat >"$out/loom-server.toml" <<TOML
[model]
path = "$serve_model"
name = "llama-125m-f16"
[server]
host = "127.0.0.1"
port = $port
[runtime]
threads = $serve_threads
[logging]
level = "warn"
[attention]
plugin = "flash_cpu"
[scheduler]
plugin = "continuous"
max_num_seqs = 64
[cache]
plugin = "paged"
kv_memory = "2GiB"
TOML
  "$bin/loom-server" --config "$out/loom-server.toml" >"$out/loom-server.log" 2>&1 &
  server_pid=$!
  for _ in $(seq 1 300); do
    curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && return 0
    sleep 0.2
  done
  echo "compare: loom-server did not start" >&2; cat "$out/loom-server.log" >&2; exit 1
}
start_llama() { server_pid="$("$root/tools/peers/llama_server.sh" "$serve_model" "$port" "$serve_threads" 4096 "$build")"; }

serve_runs() {  # serve_runs ENGINE
  # Every run has its own --seed, so no run re-sends another's prompts: a prefix cache (Loom's,
  # or the peer's last-prompt match) must not turn a repeated prompt into a free prefill.
  local base=(--base-url "http://127.0.0.1:$port" --tokenizer "$serve_model"
              --dataset-name random --random-input-len 512 --random-output-len 128 --no-ignore-eos)
  "$bin/loom-bench" serve "${base[@]}" --seed 100 --num-prompts 1 --max-concurrency 1 >/dev/null  # warm-up
  for c in 1 8 32; do
    local n=$(( c < 2 ? 4 : c * 2 )); (( c == 32 )) && n=32
    echo "== serving: $1 concurrency $c ($n prompts)" >&2
    "$bin/loom-bench" serve "${base[@]}" --seed "$c" --num-prompts "$n" --max-concurrency "$c" \
      --json "$out/serve-$1-c$c.json" >"$out/serve-$1-c$c.txt"
  done
  local seed=200
  for r in 0.25 0.5 1; do
    echo "== serving: $1 request rate $r/s" >&2
    "$bin/loom-bench" serve "${base[@]}" --seed "$((seed++))" --num-prompts 16 --request-rate "$r" \
      --json "$out/serve-$1-r$r.json" >"$out/serve-$1-r$r.txt"
  done
}
start_loom; serve_runs loom; stop_server
start_llama; serve_runs llama; stop_server

# ---- report --------------------------------------------------------------------------------
"$python" "$root/tools/bench/report.py" "$out" "$root/docs" "$bin/loom-bench" "$serve_threads"
echo "compare: wrote $root/docs/benchmarks.md (results section) and $root/docs/benchmarks/*.png" >&2
