// The Llama family as stored in GGUF: hyperparameters from metadata and weight views that
// point into the file's mapping. Every tensor's presence and shape is checked here, once, so
// the forward pass can trust them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/executor/model_arch.hpp"
#include "core/formats/gguf_file.hpp"
#include "loom/types.h"

namespace loom {

struct LlamaHparams {
  std::string architecture;  // general.architecture
  int32_t dim = 0;           // <arch>.embedding_length
  int32_t n_layers = 0;      // <arch>.block_count
  int32_t ffn_dim = 0;       // <arch>.feed_forward_length
  int32_t n_heads = 0;       // <arch>.attention.head_count
  int32_t n_kv_heads = 0;    // <arch>.attention.head_count_kv (default n_heads)
  int32_t head_dim = 0;      // <arch>.attention.key_length (default dim / n_heads)
  int32_t rope_dim = 0;      // <arch>.rope.dimension_count (default head_dim)
  float rope_freq_base = 10000.0f;  // <arch>.rope.freq_base
  float rms_eps = 1e-5f;            // <arch>.attention.layer_norm_rms_epsilon
  int32_t context_length = 0;       // <arch>.context_length
  int32_t vocab_size = 0;           // rows of token_embd.weight
  // Layer options of the family (model_arch.hpp) and of this checkpoint.
  bool qkv_bias = false;             // blk.N.attn_{q,k,v}.bias
  bool qk_norm = false;              // blk.N.attn_{q,k}_norm.weight, [head_dim]
  RopeStyle rope_style = RopeStyle::kInterleaved;
  RopeScaling rope_scaling;          // <arch>.rope.scaling.* / config.json rope_scaling
  std::vector<float> rope_freq_factors;  // rope_freqs.weight: inv_freq[i] / factor[i] (GGUF llama3)
  int32_t sliding_window = 0;        // Mistral (every layer); 0: none
  // The family's blocks (ArchSpec) and this checkpoint's values for them.
  NormPlacement norms = NormPlacement::kPre;
  GatedActivation mlp = GatedActivation::kSilu;
  float embed_scale = 1.0f;          // embedding rows x this (Gemma: sqrt(dim))
  float attention_scale = 0.0f;      // softmax scale of q.k; 0: 1 / sqrt(head_dim)
  float final_logit_softcap = 0.0f;  // <arch>.final_logit_softcapping: cap * tanh(logit / cap); 0: none
  // [n_layers] each layer's sliding window (local layers of interleaved families); empty or 0:
  // full causal attention. Mistral's window is sliding_window above, not this.
  std::vector<int32_t> layer_window;
  float rope_freq_base_local = 0.0f;  // <arch>.rope.freq_base_swa: RoPE base of windowed layers
  bool qk_norm_whole = false;  // QK-norm weights [n_heads * head_dim] / [n_kv_heads * head_dim] (OLMoE)
  // Mixture of experts (model_arch.hpp MoeSpec); n_experts 0: a dense MLP of ffn_dim.
  int32_t n_experts = 0;        // <arch>.expert_count / num_local_experts, num_experts
  int32_t n_experts_used = 0;   // <arch>.expert_used_count / num_experts_per_tok: the k of top-k
  int32_t expert_ffn_dim = 0;   // each expert's hidden size: <arch>.expert_feed_forward_length
  int32_t shared_ffn_dim = 0;   // the shared expert's: <arch>.expert_shared_feed_forward_length; 0: none
  bool norm_topk = false;       // the k probabilities renormalised to sum 1

  bool is_moe() const { return n_experts > 0; }
  bool has_windowed_layers() const;
  int32_t window_of(int32_t layer) const {
    return layer_window.empty() ? 0 : layer_window[static_cast<size_t>(layer)];
  }
  float softmax_scale() const;
};

// The RoPE inverse frequencies of a windowed (local) layer: rope_freq_base_local for the base,
// without the global layers' scaling or factors (Gemma 3 scales only its global layers).
std::vector<double> llama_rope_inv_freq_local(const LlamaHparams& hp);

// The RoPE inverse frequencies [rope_dim / 2] these hparams describe (scaling and factors applied).
std::vector<double> llama_rope_inv_freq(const LlamaHparams& hp);

// Reads and checks the hyperparameters. Throws loom::Error naming the file and the key (or the
// unsupported architecture together with the supported list).
LlamaHparams read_llama_hparams(const GgufFile& file);

struct LlamaLayerWeights {
  loom_tensor_view attn_norm{};  // [dim]
  loom_tensor_view wq{};         // [n_heads * head_dim, dim]
  loom_tensor_view wk{};         // [n_kv_heads * head_dim, dim]
  loom_tensor_view wv{};         // [n_kv_heads * head_dim, dim]
  loom_tensor_view wo{};         // [dim, n_heads * head_dim]
  loom_tensor_view ffn_norm{};   // [dim]
  loom_tensor_view w_gate{};     // [ffn_dim, dim]; absent (data NULL) in a mixture-of-experts layer
  loom_tensor_view w_up{};       // [ffn_dim, dim]
  loom_tensor_view w_down{};     // [dim, ffn_dim]
  // Present (data != nullptr) only when the family has them.
  loom_tensor_view bq{}, bk{}, bv{};  // [n_heads * head_dim], [n_kv_heads * head_dim] x2
  loom_tensor_view q_norm{}, k_norm{};  // [head_dim]
  loom_tensor_view post_attn_norm{}, post_ffn_norm{};  // [dim]; NormPlacement::kSandwich
  // Mixture of experts (hparams.is_moe(); then w_gate, w_up and w_down are absent).
  loom_tensor_view router{};  // [n_experts, dim] ffn_gate_inp
  std::vector<loom_tensor_view> exp_gate, exp_up;  // n_experts x [expert_ffn_dim, dim]
  std::vector<loom_tensor_view> exp_down;          // n_experts x [dim, expert_ffn_dim]
  loom_tensor_view sh_gate{}, sh_up{};  // [shared_ffn_dim, dim]; present with a shared expert
  loom_tensor_view sh_down{};           // [dim, shared_ffn_dim]
  loom_tensor_view sh_router{};         // [1, dim] ffn_gate_inp_shexp: the shared expert's sigmoid gate
};

// Non-owning: every view points into the GgufFile, which must outlive this.
struct LlamaWeights {
  LlamaHparams hparams;
  loom_tensor_view token_embd;   // [vocab, dim]
  std::vector<LlamaLayerWeights> layers;
  loom_tensor_view output_norm;  // [dim]
  loom_tensor_view output;       // [vocab, dim]; the token_embd view when tied
  bool tied_output = false;      // output.weight absent: the classifier reuses token_embd
  // The file the views point into, for plugins that look up companion tensors (the scales of a
  // pre-quantized weight); nullptr for sources without GGUF tensor names (HF checkpoints).
  const GgufFile* source = nullptr;
};

// Finds and shape-checks every tensor. Throws loom::Error naming the file and the tensor.
LlamaWeights load_llama_weights(const GgufFile& file);

// Checks the mixture-of-experts hparams (k within the experts, positive sizes); `where` names
// the file. Throws loom::Error.
void check_moe_hparams(const std::string& where, const LlamaHparams& hp);

// A view of a GGUF tensor in Loom order: GGUF dims are innermost-first, so dims {in, out} become
// shape [out, in] with contiguous rows.
loom_tensor_view gguf_tensor_view(const GgufTensorInfo& info);

}  // namespace loom
