#!/usr/bin/env bash
# Teacher-forced logits of Loom against llama.cpp for each GGUF type, on files llama.cpp's own
# quantizer writes from one f16 model (a random-weight preset by default): for each type, max
# |logit delta|, relative RMS, top-1 agreement and both perplexities over the same windows
# (tools/peers/logits_vs_llama_cpp.py). Peer tools are built by hand from the llama-cpp-python
# sdist (see llama_logits.cpp, llama_quantize.cpp); nothing here is part of Loom's build or tests.
#
#   tools/peers/types_vs_llama_cpp.sh F16.gguf TEXT ORACLE_DIR [TYPES...]
#     ORACLE_DIR holds llama-logits and llama-quantize-file; TYPES default to every type below.
#   LOOM_BUILD (default build/) holds loom-bench; WORK (default a temp dir) keeps the files.
set -euo pipefail
root="$(cd "$(dirname "$0")/../.." && pwd)"
src="$1" text="$2" oracle="$3"
shift 3
types=("$@")
[[ ${#types[@]} -gt 0 ]] || types=(q2_k q3_k_m q4_0 q4_1 q4_k_m q5_0 q5_1 q5_k_m q6_k q8_0 iq4_nl iq4_xs)
bench="${LOOM_BUILD:-$root/build}/bin/loom-bench"
work="${WORK:-$(mktemp -d)}"
mkdir -p "$work"
printf '%-8s %s\n' type result
for t in "${types[@]}"; do
  q="$work/model-$t.gguf"
  [[ -f "$q" ]] || "$oracle/llama-quantize-file" "$src" "$q" "$t" >/dev/null 2>&1
  "$bench" perplexity -m "$q" --quantization gguf --kv-dtype f16 --ctx 128 --text "$text" \
    --dump-logits "$work/$t" >/dev/null 2>&1
  line=$(python3 "$root/tools/peers/logits_vs_llama_cpp.py" --dump "$work/$t" --model "$q" \
    --oracle "$oracle/llama-logits" --score all --json "$work/$t.json" | tr '\n' ' ')
  printf '%-8s %s\n' "$t" "$line"
  rm -f "$work/$t.f32"
done
