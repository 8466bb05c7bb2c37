#include "core/executor/kernels/cpu/embedding.hpp"

#include <cstring>
#include <string>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/executor/kernels/cpu/parallel.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom::cpu {

void embedding(const loom_tensor_view& table, std::span<const int32_t> ids, float* out, ThreadPool* pool) {
  const int64_t vocab = table.shape[0], dim = table.shape[1], row_stride = table.strides[0];
  // GGUF block formats (real Q4_0 files store token_embd as Q4_0 or Q6_K): only the looked-up
  // rows are dequantized. row_stride counts elements, rows being whole blocks.
  const sdk::gguf::BlockGeometry blocks = sdk::gguf::block_geometry(table.dtype);
  if (table.dtype != LOOM_DTYPE_F32 && table.dtype != LOOM_DTYPE_F16 && table.dtype != LOOM_DTYPE_BF16 &&
      blocks.values == 0)
    throw Error("embedding: table dtype " + std::to_string(table.dtype) +
                " is not f32, f16, bf16, q8_0, q4_0, q4_K or q6_K");
  if (blocks.values != 0 && (dim % blocks.values != 0 || row_stride % blocks.values != 0))
    throw Error("embedding: rows of " + std::to_string(dim) + " values are not whole blocks of " +
                std::to_string(blocks.values));
  for (size_t t = 0; t < ids.size(); ++t) {
    if (ids[t] < 0 || ids[t] >= vocab)
      throw Error("embedding: token id " + std::to_string(ids[t]) + " (batch position " + std::to_string(t) +
                  ") is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  parallel_rows(pool, static_cast<int64_t>(ids.size()), dim, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      const int64_t row = ids[static_cast<size_t>(t)];
      float* dst = out + t * dim;
      if (blocks.values != 0) {
        const auto* base = static_cast<const uint8_t*>(table.data);
        sdk::gguf::dequantize_row(table.dtype, base + row * (row_stride / blocks.values) * blocks.bytes, dst, dim);
      } else if (table.dtype == LOOM_DTYPE_F32) {
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
