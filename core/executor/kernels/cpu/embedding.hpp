// Token embedding lookup: rows of the embedding table, widened to f32.
#pragma once

#include <cstdint>
#include <span>

#include "core/common/thread_pool.hpp"
#include "loom/types.h"

namespace loom::cpu {

// table: [vocab, dim] of f32, f16 or bf16 with contiguous rows; out: [ids.size(), dim].
// Throws loom::Error naming an id outside [0, vocab) or an unsupported dtype.
void embedding(const loom_tensor_view& table, std::span<const int32_t> ids, float* out, ThreadPool* pool);

}  // namespace loom::cpu
