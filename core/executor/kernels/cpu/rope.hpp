// Rotary position embedding: within each head, pair i is rotated by theta = pos * inv_freq[i],
// for i < rope_dim / 2; dimensions from rope_dim on are left as they are. Pairs are adjacent
// (x[2i], x[2i+1]) in the interleaved style (GGUF llama) or (x[i], x[i + rope_dim/2]) in the
// NeoX style (Hugging Face rotate_half, GGUF qwen2/qwen3).
#pragma once

#include <cstdint>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "loom/attention.h"

namespace loom::cpu {

class RotaryEmbedding {
 public:
  // rope_dim: rotated dimensions per head (even, <= head_dim); freq_base: usually 10000.
  RotaryEmbedding(int32_t head_dim, int32_t rope_dim, float freq_base);
  // Scaled frequencies (see rope_inv_freq), the pairing, and a factor on cos and sin (yarn).
  RotaryEmbedding(int32_t head_dim, std::vector<double> inv_freq, bool neox, double attention_factor);

  // Rotates x in place. x: [n_tokens, n_heads, head_dim], token stride token_stride (elements),
  // heads contiguous; positions: [n_tokens]. Angles are computed in double, per token, so a
  // token's result depends only on its own values and position.
  void apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t token_stride, const int32_t* positions,
             ThreadPool* pool) const;

  // The same rotation as the ABI's loom_rope (valid while this object lives), for attention
  // plugins that rotate K as they write it (forward_rope_k). The arithmetic is
  // loom/sdk_rope.hpp's in both places, so the bits are the same.
  loom_rope view() const;

  int32_t head_dim() const { return head_dim_; }
  int32_t rope_dim() const { return rope_dim_; }

 private:
  int32_t head_dim_;
  int32_t rope_dim_;
  std::vector<double> inv_freq_;  // [rope_dim / 2] base^(-2i / rope_dim), then scaled
  bool neox_ = false;
  double attention_factor_ = 1.0;
};

}  // namespace loom::cpu
