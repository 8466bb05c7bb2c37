// The cache create args of the block-table group conformance suites (cache interfaces 1.5 and
// 1.6): group 0 full attention, groups 1 and 2 a window of 32 tokens, two layers of f32 K/V per
// block. Made with {"num_blocks": 40, "block_size": 16}.
#pragma once

#include <cstdint>

#include "loom/cache.h"

namespace loom::conformance {

inline constexpr int32_t kGroupWindows[] = {0, 32, 32};
inline constexpr int32_t kGroupCount = 3;
inline constexpr int32_t kGroupBlock = 16;
inline constexpr const char* kGroupPool = R"({"num_blocks": 40, "block_size": 16})";

inline loom_cache_create_args group_create_args() {
  loom_cache_create_args a{};
  a.struct_size = sizeof(a);
  a.n_layers = 6;
  a.n_kv_heads = 1;
  a.head_dim = 8;
  a.kv_dtype = LOOM_DTYPE_F32;
  a.bytes_per_token = 2 * 2 * 8 * 4;  // K and V of two layers, 8 f32 each
  a.max_model_len = 4096;
  a.n_groups = kGroupCount;
  a.group_windows = kGroupWindows;
  return a;
}

}  // namespace loom::conformance
