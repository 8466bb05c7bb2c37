// The decoder families Loom runs, as a table of block declarations over one forward pass (RMSNorm,
// rotary attention with grouped KV heads, a gated MLP): what differs between Llama, Mistral,
// Qwen2, Qwen3 and Gemma 3 is a field of their row here, never a copy of the forward.
//
// Adding a family is adding a row: name it as GGUF and config.json do, then declare its blocks —
// where the norms sit (kNormPre, or kNormSandwich with a second norm after each sublayer), the
// attention variant (q/k/v bias, QK-norm per head or over the whole projection, the pattern of
// sliding-window layers and their RoPE base), the MLP (its activation; or a mixture of experts,
// with how the router weighs the chosen ones and whether a shared expert runs beside them), and
// whether the embedding is scaled. A block the table cannot say yet (parallel attention+MLP) is
// one new field here and one branch in the forward.
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

// Where a layer's RMSNorms sit around its two sublayers (attention, MLP).
enum class NormPlacement {
  kPre,       // x += f(norm(x)): Llama
  kSandwich,  // x += post_norm(f(pre_norm(x))): Gemma 2/3 (post_attention_norm, post_ffw_norm)
};

// The elementwise half of the gated MLP: down(act(gate(x)) * up(x)).
enum class GatedActivation {
  kSilu,      // SwiGLU
  kGeluTanh,  // GeGLU with the tanh approximation of GELU (Gemma's gelu_pytorch_tanh)
};

// A mixture-of-experts MLP (Mixtral, Qwen2-MoE, Qwen3-MoE, OLMoE): a router [n_experts, dim]
// scores every expert, softmax turns the scores into probabilities, each token runs through its
// top-k experts (each a gated MLP of its own) and their outputs are summed weighted by those
// probabilities, renormalised to sum 1 when norm_topk.
struct MoeSpec {
  bool experts = false;        // the MLP is a mixture of experts
  bool norm_topk = false;      // default of config.json norm_topk_prob / GGUF <arch>.expert_weights_norm
  bool shared_expert = false;  // plus a dense expert on every token, scaled by sigmoid(w . x) (Qwen2-MoE)
};

struct ArchSpec {
  const char* name;        // GGUF general.architecture, and Loom's name for the family
  const char* hf_class;    // config.json "architectures"[0]; "" when Loom reads it from GGUF only
  const char* hf_type;     // config.json "model_type"
  const char* gguf_arch;   // what loom-convert writes (llama.cpp's name for the family)
  bool qkv_bias;           // q/k/v projections carry a bias (Qwen2)
  bool qk_norm;            // RMSNorm over each q and k head before RoPE (Qwen3, Gemma 3)
  RopeStyle gguf_rope;     // pairing of GGUF-stored q/k weights for this family
  NormPlacement norms = NormPlacement::kPre;
  GatedActivation mlp = GatedActivation::kSilu;
  bool embed_scale_sqrt_dim = false;  // embedding rows are multiplied by sqrt(dim) (Gemma)
  // Interleaved local (sliding-window) and global layers: with <arch>.attention.sliding_window
  // set, layer l is local unless l % period == period - 1 (default for the GGUF key
  // <arch>.attention.sliding_window_pattern); 0: the window, if any, is Mistral's, on every layer.
  int32_t local_period = 0;
  double local_rope_base = 0.0;  // RoPE base of local layers (default for <arch>.rope.freq_base_swa)
  bool qk_norm_whole = false;  // QK-norm over the whole q and k projections, not per head (OLMoE)
  MoeSpec moe{};
};

inline constexpr ArchSpec kArchitectures[] = {
    {"llama", "LlamaForCausalLM", "llama", "llama", false, false, RopeStyle::kInterleaved},
    {"mistral", "MistralForCausalLM", "mistral", "llama", false, false, RopeStyle::kInterleaved},
    {"qwen2", "Qwen2ForCausalLM", "qwen2", "qwen2", true, false, RopeStyle::kNeox},
    {"qwen3", "Qwen3ForCausalLM", "qwen3", "qwen3", false, true, RopeStyle::kNeox},
    // Gemma 3 text: sandwich norms (GGUF stores Gemma's (1 + w) already added), QK-norm, GeGLU,
    // embedding x sqrt(dim), five local layers of window 512 (RoPE base 10000) per global one.
    {.name = "gemma3", .hf_class = "", .hf_type = "", .gguf_arch = "gemma3", .qkv_bias = false, .qk_norm = true,
     .gguf_rope = RopeStyle::kNeox, .norms = NormPlacement::kSandwich, .mlp = GatedActivation::kGeluTanh,
     .embed_scale_sqrt_dim = true, .local_period = 6, .local_rope_base = 10000.0},
    // Mixture-of-experts families. Mixtral is GGUF "llama" with experts (llama.cpp's spelling):
    // a GGUF whose architecture row has no experts but whose file has <arch>.expert_count reads as
    // the experts row of the same gguf_arch (find_arch_for_gguf).
    {.name = "mixtral", .hf_class = "MixtralForCausalLM", .hf_type = "mixtral", .gguf_arch = "llama",
     .qkv_bias = false, .qk_norm = false, .gguf_rope = RopeStyle::kInterleaved, .moe = {true, true, false}},
    {.name = "qwen2moe", .hf_class = "Qwen2MoeForCausalLM", .hf_type = "qwen2_moe", .gguf_arch = "qwen2moe",
     .qkv_bias = true, .qk_norm = false, .gguf_rope = RopeStyle::kNeox, .moe = {true, false, true}},
    {.name = "qwen3moe", .hf_class = "Qwen3MoeForCausalLM", .hf_type = "qwen3_moe", .gguf_arch = "qwen3moe",
     .qkv_bias = false, .qk_norm = true, .gguf_rope = RopeStyle::kNeox, .moe = {true, true, false}},
    {.name = "olmoe", .hf_class = "OlmoeForCausalLM", .hf_type = "olmoe", .gguf_arch = "olmoe", .qkv_bias = false,
     .qk_norm = true, .gguf_rope = RopeStyle::kNeox, .qk_norm_whole = true, .moe = {true, false, false}},
};

// The row whose name (GGUF) or hf_class / hf_type (config.json) matches; nullptr when none.
const ArchSpec* find_arch_by_name(const std::string& gguf_arch);
// The row a GGUF file reads as: its general.architecture's row, or, when the file has experts
// and that row has none, the experts row written under the same gguf_arch (Mixtral as "llama").
const ArchSpec* find_arch_for_gguf(const std::string& gguf_arch, bool has_experts);
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
