#include "core/executor/kernels/cpu/embedding.hpp"

#include <cstring>
#include <string>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/executor/kernels/cpu/parallel.hpp"

namespace loom::cpu {

void embedding(const loom_tensor_view& table, std::span<const int32_t> ids, float* out, ThreadPool* pool) {
  const int64_t vocab = table.shape[0], dim = table.shape[1], row_stride = table.strides[0];
  if (table.dtype != LOOM_DTYPE_F32 && table.dtype != LOOM_DTYPE_F16 && table.dtype != LOOM_DTYPE_BF16)
    throw Error("embedding: table dtype " + std::to_string(table.dtype) + " is not f32, f16 or bf16");
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocab)
      throw Error("embedding: token id " + std::to_string(ids[t]) + " (batch position " + std::to_string(t) +
                  ") is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  parallel_rows(pool, static_cast<int64_t>(ids.size()), dim, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = ids[static_cast<size_t>(t)];
      float* dst = out + t * dim;
      if (table.dtype == LOOM_DTYPE_F32) {
        std::memcpy(dst, static_cast<const float*>(table.data) + row * row_stride, sizeof(float) * dim);
      } else {
        const uint16_t* src = static_cast<const uint16_t*>(table.data) + row * row_stride;
        if (table.dtype == LOOM_DTYPE_F16) {
          for (int64_t i = 0; i < dim; ++i) dst[i] = f16_to_f32(src[i]);
        } else {
          for (int64_t i = 0; i < dim; ++i) dst[i] = bf16_to_f32(src[i]);
        }
      }
    }
  });
}

}  // namespace loom::cpu
