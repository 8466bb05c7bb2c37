// LayerNorm with bias over rows (BERT): y = (x - mean) / sqrt(var + eps) * weight + bias, the
// variance biased (divided by dim), as torch.nn.LayerNorm computes it.
#pragma once

#include <cstdint>

#include "core/common/thread_pool.hpp"

namespace loom::cpu {

// x, y: [n_rows, dim] (y may be x); weight, bias: [dim].
void layer_norm(const float* x, const float* weight, const float* bias, float* y, int64_t n_rows, int64_t dim,
                float eps, ThreadPool* pool);

}  // namespace loom::cpu
