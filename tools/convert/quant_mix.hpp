// loom-convert --quantize q4_k_m | q5_k_m: the K-quant mixes, with each tensor's type chosen as
// llama.cpp's llama_model_quantize chooses it for LLAMA_FTYPE_MOSTLY_Q4_K_M / Q5_K_M (facts read
// from llama.cpp's src/llama-quant.cpp, llama_tensor_get_type_impl and tensor_type_fallback):
//
//   base type                     q4_k_m: q4_K              q5_k_m: q5_K
//   output.weight (and a tied     q6_K; q8_0 when its rows are not whole blocks of the base type
//     token_embd.weight)            (or the arch is falcon)
//   token_embd.weight (untied)    the base type
//   attn_v / attn_qkv / attn_kv_b q6_K when use_more_bits(i, n) over the n such tensors;
//                                 on a 70B model (80 layers, llama with GQA, or qwen2) a q4_K
//                                 left becomes q5_K
//   ffn_down                      q6_K when use_more_bits(layer, n_layer)
//                                 (q4_k_m on falcon: q6_K for the first 1/16, then q5_K where
//                                 use_more_bits, else q4_K)
//   everything else quantized     the base type
//   use_more_bits(i, n) = i < n/8 || i >= 7n/8 || (i - n/8) % 3 == 2
//
// Then, when a tensor's rows are not whole blocks of its type: q4_K -> q5_0, q5_K -> q5_1,
// q6_K -> q8_0, and f16 when even the 32-value block does not fit. Counters (the i above) run in
// llama.cpp's order: tensors sorted by layer ("blk.N."; others first), then by name.
//
// What is quantized follows llama.cpp's tensor_allows_quantization for dense models: names ending
// in "weight" with 2 or more dimensions, not norms, not position or token-type embeddings, not
// expert gates. A tensor already block-quantized is kept as it is (llama.cpp would refuse it
// without --allow-requantize), with a note. Mixture-of-experts files (expert_count > 1) are
// refused: Loom runs dense models only, and llama.cpp's MoE rules are not carried over.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom::convert {

struct QuantMix {
  std::string name;    // the --quantize value: "q4_k_m"
  loom_dtype base;     // the type of every tensor no rule names
  uint32_t file_type;  // general.file_type: llama.cpp's LLAMA_FTYPE_MOSTLY_Q4_K_M = 15, Q5_K_M = 17
};
const std::vector<QuantMix>& quant_mixes();
const QuantMix* find_quant_mix(const std::string& name);  // nullptr when not a mix

// The model facts the rules read (GGUF metadata <arch>.*).
struct MixModel {
  std::string arch;  // general.architecture
  int64_t n_layer = 0;
  int64_t n_head = 0;
  int64_t n_head_kv = 0;
  int64_t n_expert = 0;
};
MixModel mix_model(const GgufFile& file);

struct MixTensor {
  loom_dtype dtype;  // the tensor's type in the output (its own when kept)
  std::string note;  // why, when a fallback or a kept tensor is worth telling
};
// One entry per tensor of `tensors`, in their order. Pure: no type needs to be writable here.
std::vector<MixTensor> plan_mix(const std::vector<GgufTensorInfo>& tensors, const MixModel& model, const QuantMix& mix);

// The writer of `in` in `mix`. Refuses (loom::Error) a plan that needs a type this build cannot
// write, naming the type, the mix and the first tensor that needs it. Notes go to `notes`.
GgufWriter quantize_gguf_mix(const GgufFile& in, const QuantMix& mix, std::vector<std::string>* notes);

}  // namespace loom::convert
