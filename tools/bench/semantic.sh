#!/usr/bin/env bash
# The semantic cache on the project's labelled question pairs (tests/data/semantic/pairs.jsonl,
# held-out half: the pairs of odd-numbered questions, 200 pairs): for each threshold a fresh
# loom-server with the `embedding` cache stores an answer for every pair's `a` and asks every
# `b`, and the table gives the paraphrase hit rate, false hits / hits, and the p50 latency of a
# hit and of a computed answer (semantic_bench.py says exactly what is counted).
#
#   tools/bench/semantic.sh [BUILD_DIR]
# Environment: THRESHOLDS ("0.90 0.93 0.96 0.98"), KEY_TERMS (true: the key-term guard),
# MAX_TOKENS (32), HALF (heldout | calibration | all), MODELS (BUILD_DIR/models). The generating
# model is SmolLM2-135M-Instruct Q4_1 when MODELS has it (tools/fetch-model.sh), else the bundled
# demo model (fine for counting hits; its latencies are not an LLM's). The encoder,
# all-MiniLM-L6-v2, is fetched into BUILD_DIR with tools/fetch-minilm.sh when MODELS lacks it.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "${1:-$root/build}" && pwd)"
models="${MODELS:-$build/models}"
out="$build/bench-results/semantic"
encoder="$models/all-MiniLM-L6-v2"
[[ -d "$encoder" ]] || encoder="$("$root/tools/fetch-minilm.sh" "$build")"
model="$models/SmolLM2-135M-Instruct.Q4_1.gguf"
[[ -f "$model" ]] || model="$root/tests/data/stories260K.gguf"

rm -rf "$out" && mkdir -p "$out"
case "${HALF:-heldout}" in
  heldout) awk 'int((NR-1)/2)%2==1' "$root/tests/data/semantic/pairs.jsonl" > "$out/pairs.jsonl" ;;
  calibration) awk 'int((NR-1)/2)%2==0' "$root/tests/data/semantic/pairs.jsonl" > "$out/pairs.jsonl" ;;
  all) cp "$root/tests/data/semantic/pairs.jsonl" "$out/pairs.jsonl" ;;
  *) echo "HALF must be heldout, calibration or all" >&2; exit 2 ;;
esac
echo "$(wc -l < "$out/pairs.jsonl") pairs (${HALF:-heldout}), model $(basename "$model"), encoder $encoder," \
     "key_terms ${KEY_TERMS:-true}, $(nproc) cores, $(git -C "$root" rev-parse --short HEAD)"
python3 "$root/tools/bench/semantic_bench.py" --build "$build" --model "$model" --encoder "$encoder" \
  --pairs "$out/pairs.jsonl" --out "$out" --thresholds "${THRESHOLDS:-0.90 0.93 0.96 0.98}" \
  --key-terms "${KEY_TERMS:-true}" --max-tokens "${MAX_TOKENS:-32}"
