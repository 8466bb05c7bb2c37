#!/usr/bin/env bash
# Accuracy report (docs/quantization.md): every weight format and KV dtype against f32.
#   1. Perplexity of the demo model (tests/data/stories260K.gguf) on the held-out text
#      tests/data/heldout_stories.txt, and its change vs f32 weights + f32 KV.
#   2. The relative RMS error of the logits vs f32 of a random llama-125m model (the demo
#      model's vocabulary) over the text's first COMPARE_TOKENS tokens: the demo model's dims
#      (64, 172) are not multiples of 256, so there the K-quants fall back per tensor (q4_K ->
#      q4_0, q6_K -> q8_0, ffn_down stays f32); llama-125m (768, 3072) takes them whole.
# Prints a markdown table.
#
# Usage: tools/bench/accuracy-report.sh BUILD_DIR
#   env: THREADS (default 2), COMPARE_TOKENS (default 256), KEEP=1 keeps the temp dir.
set -euo pipefail

build=${1:?usage: accuracy-report.sh BUILD_DIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
bench="$build/bin/loom-bench"
convert="$build/bin/loom-convert"
for exe in "$bench" "$convert"; do
  [[ -x $exe ]] || { echo "accuracy-report: $exe not built" >&2; exit 1; }
done
threads=${THREADS:-2}
compare_tokens=${COMPARE_TOKENS:-256}
demo="$root/tests/data/stories260K.gguf"
text="$root/tests/data/heldout_stories.txt"
tmp=$(mktemp -d)
[[ ${KEEP:-0} == 1 ]] && echo "accuracy-report: files kept in $tmp" >&2 || trap 'rm -rf "$tmp"' EXIT

# The model files: the demo and random llama-125m in f32, and each in the GGUF block formats.
big="$tmp/llama125m.gguf"
"$convert" --random --preset llama-125m --dtype f32 --vocab-from "$demo" -o "$big" >/dev/null
for q in q8_0 q4_0 q4_k q6_k; do
  "$convert" --input "$demo" --quantize "$q" -o "$tmp/demo-$q.gguf" 2>/dev/null
  "$convert" --input "$big" --quantize "$q" -o "$tmp/llama125m-$q.gguf" 2>/dev/null
done

# field JSON KEY [SUBKEY]: one number from a result file.
field() { python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); [j:=j[k] for k in sys.argv[2:]]; print(j)' "$@"; }

# run LABEL PLUGIN CONFIG KV FILE_SUFFIX: one table row.
run() {
  local label=$1 plugin=$2 config=$3 kv=$4 suffix=$5
  local demo_model=$demo big_model=$big
  if [[ -n $suffix ]]; then demo_model="$tmp/demo-$suffix.gguf"; big_model="$tmp/llama125m-$suffix.gguf"; fi
  "$bench" perplexity --model "$demo_model" --text "$text" --quantization "$plugin" \
    --quantization-config "$config" --kv-dtype "$kv" -t "$threads" --json "$tmp/ppl.json" \
    >/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  "$bench" perplexity --model "$big_model" --text "$text" --quantization "$plugin" \
    --quantization-config "$config" --kv-dtype "$kv" -t "$threads" --compare-logits "$big" \
    --compare-tokens "$compare_tokens" --ctx $((compare_tokens + 1)) --json "$tmp/err.json" \
    >/dev/null 2>"$tmp/log" || { cat "$tmp/log" >&2; exit 1; }
  local ppl err
  ppl=$(field "$tmp/ppl.json" perplexity)
  err=$(field "$tmp/err.json" logits_error rel_rms)
  [[ -z ${base_ppl:-} ]] && base_ppl=$ppl
  python3 -c 'import sys; p, b, e = map(float, sys.argv[4:7])
print(f"| {sys.argv[1]} | {sys.argv[2]} | {sys.argv[3]} | {p:.4f} | {100 * (p / b - 1):+.2f}% | {e:.5f} |")' \
    "$label" "$plugin $config" "$kv" "$ppl" "$base_ppl" "$err"
}

echo "Demo model: $(basename "$demo") on $(basename "$text") (ctx 512, every token scored once)."
echo "Logit error: random llama-125m (--preset llama-125m, vocab of the demo model), first" \
  "$compare_tokens tokens of the text, RMS(logits - f32) / RMS(f32 logits)."
echo "Commit $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo unknown)$(git -C "$root" diff --quiet 2>/dev/null || echo ' (+ local changes)'), $threads threads."
echo
echo "| weights | plugin + config | KV | demo ppl | vs f32 | llama-125m logit rel. error |"
echo "|---|---|---|---|---|---|"
run "f32" none '{}' f32 ""
run "INT8 w8a16" int8 '{"mode":"w8a16"}' f32 ""
run "INT8 w8a8 (no SmoothQuant calibration)" int8 '{"mode":"w8a8"}' f32 ""
run "INT4 group 128, zero points" int4 '{"group_size":128}' f32 ""
run "INT4 group 32, zero points" int4 '{"group_size":32}' f32 ""
run "INT4 group 32, symmetric" int4 '{"group_size":32,"zero_point":false}' f32 ""
run "FP8 E4M3" fp8 '{}' f32 ""
run "f32, bf16 compute" none '{"compute":"bf16"}' f32 ""
run "GGUF Q8_0" gguf '{}' f32 q8_0
run "GGUF Q4_0" gguf '{}' f32 q4_0
run "GGUF Q4_K" gguf '{}' f32 q4_k
run "GGUF Q6_K" gguf '{}' f32 q6_k
for kv in f16 bf16 int8 fp8_e4m3; do run "f32" none '{}' "$kv" ""; done
