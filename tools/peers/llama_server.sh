#!/usr/bin/env bash
# Starts the peer's OpenAI-compatible server (llama-cpp-python's llama_cpp.server, i.e. llama.cpp)
# on loopback, on the same GGUF and thread count Loom gets, and waits until it answers.
# Prints its PID; stop it with `kill PID`.
#
#   tools/peers/llama_server.sh MODEL.gguf PORT THREADS [CTX] [BUILD_DIR]
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
model="$1" port="$2" threads="$3" ctx="${4:-2048}" build="${5:-$root/build}"
python="$("$root/tools/peers/setup-llama-cpp.sh" "$build")"
log="$build/peers/llama-server-$port.log"
# n_batch 512 is llama.cpp's default prompt chunk. The server runs one request at a time;
# interrupt_requests False makes later requests queue instead of cancelling the running one.
"$python" -m llama_cpp.server --model "$model" --model_alias "$(basename "$model" .gguf)" \
  --host 127.0.0.1 --port "$port" --n_threads "$threads" --n_threads_batch "$threads" \
  --n_ctx "$ctx" --n_batch 512 --interrupt_requests False >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 600); do
  if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then echo "$pid"; exit 0; fi
  if ! kill -0 "$pid" 2>/dev/null; then echo "llama_server: the server exited; see $log" >&2; tail -20 "$log" >&2; exit 1; fi
  sleep 0.2
done
kill "$pid"; echo "llama_server: no answer on port $port after 120 s; see $log" >&2; exit 1
