// The decoder families Loom runs, as a table of layer options over one forward pass (pre-norm
// RMSNorm, rotary attention with grouped KV heads, SwiGLU MLP): what differs between Llama,
// Mistral, Qwen2 and Qwen3 is a flag here, never a copy of the forward.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

// How rotary embedding pairs the dimensions of a head.
enum class RopeStyle {
  kInterleaved,  // (x[2i], x[2i+1]): GGUF "llama", whose converter permutes q/k rows for it
  kNeox,         // (x[i], x[i + rope_dim/2]): Hugging Face rotate_half, GGUF qwen2/qwen3
};

struct ArchSpec {
  const char* name;        // GGUF general.architecture, and Loom's name for the family
  const char* hf_class;    // config.json "architectures"[0]
  const char* hf_type;     // config.json "model_type"
  const char* gguf_arch;   // what loom-convert writes (llama.cpp's name for the family)
  bool qkv_bias;           // q/k/v projections carry a bias (Qwen2)
  bool qk_norm;            // RMSNorm over each q and k head before RoPE (Qwen3)
  RopeStyle gguf_rope;     // pairing of GGUF-stored q/k weights for this family
};

inline constexpr ArchSpec kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "llama", "llama", false, false, RopeStyle::kInterleaved},
    {"mistral", "MistralForCausalLM", "mistral", "llama", false, false, RopeStyle::kInterleaved},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", "qwen2", true, false, RopeStyle::kNeox},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", "qwen3", false, true, RopeStyle::kNeox},
};

// The row whose name (GGUF) or hf_class / hf_type (config.json) matches; nullptr when none.
const ArchSpec* find_arch_by_name(const std::string& gguf_arch);
const ArchSpec* find_arch_by_hf(const std::string& hf_class, const std::string& hf_type);
// "llama, mistral, qwen2, qwen3" (with_hf: the config.json class names too), for refusals.
std::string supported_architectures(bool with_hf);

// RoPE frequency scaling as config.json rope_scaling / GGUF rope.scaling.* describe it.
struct RopeScaling {
  std::string type = "none";  // none, linear, dynamic, llama3, yarn
  double factor = 1.0;
  int64_t original_max_position = 0;   // original_max_position_embeddings
  double low_freq_factor = 1.0;        // llama3
  double high_freq_factor = 4.0;       // llama3
  double beta_fast = 32.0;             // yarn
  double beta_slow = 1.0;              // yarn
  double attention_factor = 0.0;       // yarn; 0: 0.1 * ln(factor) + 1
  bool truncate = true;                // yarn: round the correction range to whole dims
};

// Inverse frequencies [rope_dim / 2] for base^(-2i / rope_dim) after scaling:
//   linear: / factor;  llama3: per-wavelength blend of / factor and unscaled;
//   dynamic (NTK): base * (factor^2 - factor + 1)^(d / (d - 2)), the base Hugging Face's dynamic
//     scaling reaches at factor x original length, fixed once (as vLLM does) so cached keys
//     never change;  yarn: ramp between interpolated and extrapolated frequencies.
// Throws loom::Error naming the field for an unknown type or a bad factor.
std::vector<double> rope_inv_freq(int32_t rope_dim, double base, const RopeScaling& s);
// The factor cos and sin are scaled by (yarn's attention factor; 1 otherwise).
double rope_attention_factor(const RopeScaling& s);

}  // namespace loom
