#!/usr/bin/env bash
# Resident memory of loom-server while it serves a model, against the bound the quantization
# issue sets: peak RSS <= 1.15 x model file size + the configured KV pool.
# The server runs with the `gguf` quantization plugin by default (block formats read in place
# from the mapping; QUANTIZATION=none for an f16/bf16/f32 file, repacked into panels at load), a paged KV pool of KV_MEMORY, and serves CONCURRENCY streams of random prompts so
# that the weights, the pool and the step buffers are all touched. RSS is sampled from
# /proc/PID/status every 0.2 s; VmHWM (the kernel's own peak) is read at the end.
#
#   tools/bench/serve-memory.sh BUILD_DIR MODEL.gguf     (THREADS, KV_MEMORY=256MiB,
#                                                         CONCURRENCY=8, PROMPTS=16, PORT,
#                                                         QUANTIZATION=gguf)
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:?usage: serve-memory.sh BUILD_DIR MODEL.gguf}" && pwd)"
model="$(realpath "${2:?usage: serve-memory.sh BUILD_DIR MODEL.gguf}")"
bin="$build/bin"
threads="${THREADS:-$(nproc)}"
kv_memory="${KV_MEMORY:-256MiB}"
concurrency="${CONCURRENCY:-8}"
prompts="${PROMPTS:-16}"
port="${PORT:-18490}"
quantization="${QUANTIZATION:-gguf}"
out="$build/bench-results/serve-memory"
mkdir -p "$out"
cfg="$out/server.toml"
cat >"$cfg" <<TOML
[model]
path = "$model"
name = "memory-check"
[server]
host = "127.0.0.1"
port = $port
[runtime]
threads = $threads
[logging]
level = "warn"
[attention]
plugin = "flash_cpu"
[quantization]
plugin = "$quantization"
[cache]
plugin = "paged"
kv_memory = "$kv_memory"
TOML

"$bin/loom-server" --config "$cfg" >"$out/server.log" 2>&1 &
server_pid=$!
trap 'kill $server_pid 2>/dev/null; wait $server_pid 2>/dev/null || true' EXIT
for _ in $(seq 1 600); do
  curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1 && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$out/server.log" >&2; exit 1; }
  sleep 0.2
done
rss_kib() { awk -v k="$1" '$1 == k":" {print $2}' "/proc/$server_pid/status"; }
idle_rss=$(rss_kib VmRSS)

peak=0
( while kill -0 "$server_pid" 2>/dev/null; do rss_kib VmRSS; sleep 0.2; done ) >"$out/rss.samples" 2>/dev/null &
sampler=$!
"$bin/loom-bench" serve --base-url "http://127.0.0.1:$port" --tokenizer "$model" --dataset-name random \
  --random-input-len 256 --random-output-len 32 --num-prompts "$prompts" --max-concurrency "$concurrency" \
  --no-progress >"$out/bench.txt"
hwm=$(rss_kib VmHWM)
kill "$sampler" 2>/dev/null || true
peak=$(sort -n "$out/rss.samples" | tail -1)

file_bytes=$(stat -c %s "$model")
pool_bytes=$(python3 -c "
import re,sys
m=re.fullmatch(r'(\d+)\s*([KMG]i?B|B)?', '$kv_memory'.strip())
n=int(m.group(1)); u=(m.group(2) or 'B')
print(n*{'B':1,'KiB':1<<10,'MiB':1<<20,'GiB':1<<30,'KB':10**3,'MB':10**6,'GB':10**9}[u])")
bound=$(python3 -c "print(1.15*$file_bytes+$pool_bytes)")
python3 - <<PY
f, pool, idle, peak, hwm, bound = $file_bytes, $pool_bytes, ${idle_rss}*1024, ${peak:-0}*1024, ${hwm}*1024, $bound
mib = lambda b: b / 2**20
print(f"model file        {mib(f):9.1f} MiB  ($model)")
print(f"KV pool           {mib(pool):9.1f} MiB  (kv_memory = $kv_memory)")
print(f"RSS idle          {mib(idle):9.1f} MiB")
print(f"RSS peak sampled  {mib(peak):9.1f} MiB")
print(f"VmHWM             {mib(hwm):9.1f} MiB")
print(f"bound 1.15 x file + pool = {mib(bound):.1f} MiB; VmHWM / (file + pool) = {hwm / (f + pool):.3f}; "
      f"{'within' if hwm <= bound else 'OVER'} the bound")
PY
grep -E "Successful requests|Output token throughput" "$out/bench.txt" || true
