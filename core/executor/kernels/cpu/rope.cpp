#include "core/executor/kernels/cpu/rope.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "core/common/error.hpp"
#include "core/executor/kernels/cpu/parallel.hpp"
#include "loom/sdk_rope.hpp"

namespace loom::cpu {
namespace {
constexpr int32_t kMaxPairs = sdk::rope::kMaxPairs;  // the per-token angle table lives on the stack
}

RotaryEmbedding::RotaryEmbedding(int32_t head_dim, int32_t rope_dim, float freq_base)
    : head_dim_(head_dim), rope_dim_(rope_dim) {
  if (rope_dim <= 0 || rope_dim % 2 != 0 || rope_dim > head_dim || rope_dim / 2 > kMaxPairs)
    throw Error("rope: rope_dim " + std::to_string(rope_dim) + " must be even, positive, at most head_dim " +
                std::to_string(head_dim) + " and at most " + std::to_string(2 * kMaxPairs));
  if (!(freq_base > 0.0f)) throw Error("rope: freq_base " + std::to_string(freq_base) + " must be positive");
  inv_freq_.resize(static_cast<size_t>(rope_dim / 2));
  for (int32_t i = 0; i < rope_dim / 2; ++i)
    inv_freq_[static_cast<size_t>(i)] = std::pow(static_cast<double>(freq_base), -2.0 * i / rope_dim);
}

RotaryEmbedding::RotaryEmbedding(int32_t head_dim, std::vector<double> inv_freq, bool neox, double attention_factor)
    : head_dim_(head_dim),
      rope_dim_(static_cast<int32_t>(inv_freq.size()) * 2),
      inv_freq_(std::move(inv_freq)),
      neox_(neox),
      attention_factor_(attention_factor) {
  if (rope_dim_ <= 0 || rope_dim_ > head_dim || rope_dim_ / 2 > kMaxPairs)
    throw Error("rope: " + std::to_string(rope_dim_ / 2) + " frequencies do not fit head_dim " + std::to_string(head_dim) +
                " (at most " + std::to_string(kMaxPairs) + ")");
}

loom_rope RotaryEmbedding::view() const {
  return loom_rope{sizeof(loom_rope), rope_dim_, neox_ ? 1 : 0, inv_freq_.data(), attention_factor_};
}

void RotaryEmbedding::apply(float* x, int64_t n_tokens, int64_t n_heads, int64_t token_stride,
                            const int32_t* positions, ThreadPool* pool) const {
  const int32_t n_pairs = rope_dim_ / 2;
  const loom_rope rope = view();
  parallel_rows(pool, n_tokens, n_heads * rope_dim_ * 2 + n_pairs * 40, [&](int64_t begin, int64_t end) {
    float cos_t[kMaxPairs];
    float sin_t[kMaxPairs];
    for (int64_t t = begin; t < end; ++t) {
      sdk::rope::angles(rope, positions[t], cos_t, sin_t);
      for (int64_t h = 0; h < n_heads; ++h) sdk::rope::rotate(rope, x + t * token_stride + h * head_dim_, cos_t, sin_t);
    }
  });
}

}  // namespace loom::cpu
