// Decoder model shapes: named presets for random-weight benchmark models (Llama, Gemma 3 with
// its explicit head size and interleaved sliding-window layers, and Mixtral-style mixtures of
// experts) and a parser for
// "dim=..,hidden=..,layers=..,heads=..,kv_heads=..,ctx=.." specs.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace loom {

struct LlamaShape {
  int64_t dim = 0;             // embedding_length
  int64_t hidden_dim = 0;      // feed_forward_length
  int64_t n_layers = 0;        // block_count
  int64_t n_heads = 0;
  int64_t n_kv_heads = 0;
  int64_t context_length = 0;
  int64_t vocab_size = 0;      // 0 until a tokenizer fixes it
  float rms_eps = 1e-5f;
  std::optional<float> rope_freq_base;  // written only when set (GGUF readers default to 10000)
  bool tied_output = false;    // true: no output.weight, the head reuses token_embd
  std::string arch = "llama";  // general.architecture: "llama" or "gemma3" (model_arch.hpp)
  int64_t head_dim = 0;        // attention.key_length; 0: dim / heads
  int64_t sliding_window = 0;  // gemma3: window of the local layers; 0: none
  int64_t window_period = 0;   // gemma3: attention.sliding_window_pattern (every Nth layer global)
  // Mixtral-style MoE (llama arch): every layer's MLP is n_experts experts of hidden_dim, each
  // token routed to the top n_experts_used by softmax (llama.expert_count / expert_used_count).
  int64_t n_experts = 0;       // 0: a dense MLP
  int64_t n_experts_used = 0;

  int64_t head_size() const { return head_dim > 0 ? head_dim : n_heads > 0 ? dim / n_heads : 0; }
  // Throws loom::Error listing every problem (non-positive sizes, dim % heads, heads % kv_heads,
  // odd head size, experts used outside 1..experts).
  void validate() const;
};

struct ModelPreset {
  std::string name;
  std::string description;
  LlamaShape shape;
};

const std::vector<ModelPreset>& llama_presets();
// Throws loom::Error naming the valid presets when `name` is unknown.
LlamaShape llama_preset(const std::string& name);
// "dim=64,hidden=172,layers=2,heads=8,kv_heads=4,ctx=512" (kv_heads defaults to heads, ctx to
// 2048; rope_base= and eps= optional). Throws loom::Error naming the bad or missing key.
LlamaShape parse_llama_dims(const std::string& spec);

}  // namespace loom
