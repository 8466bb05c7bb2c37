// Token embedding lookup on GGUF block-quantized tables (Q4_0, Q8_0, Q2_K..Q6_K, IQ4_XS): each
// looked-up row is the dequantized row, whatever its neighbours; a row that is not whole blocks,
// or of a type without a block codec, is refused.
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "core/common/error.hpp"
#include "core/executor/kernels/cpu/embedding.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom {
namespace {

loom_tensor_view table_view(void* data, loom_dtype dtype, int64_t vocab, int64_t dim) {
  loom_tensor_view v{};
  v.data = data;
  v.dtype = dtype;
  v.ndim = 2;
  v.shape[0] = vocab;
  v.shape[1] = dim;
  v.shape[2] = v.shape[3] = 1;
  v.strides[0] = dim;
  v.strides[1] = v.strides[2] = v.strides[3] = 1;
  return v;
}

TEST(EmbeddingBlocks, LooksUpDequantizedRows) {
  constexpr int64_t kVocab = 7, kDim = 512;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::vector<float> values(kVocab * kDim);
  for (auto& v : values) v = u(rng);
  ThreadPool pool(2);
  for (const loom_dtype dtype : {LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0, LOOM_DTYPE_Q4_K, LOOM_DTYPE_Q6_K, LOOM_DTYPE_Q2_K,
                                 LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q5_K, LOOM_DTYPE_IQ4_XS}) {
    const auto geo = sdk::gguf::block_geometry(dtype);
    const int64_t row_bytes = kDim / geo.values * geo.bytes;
    std::vector<uint8_t> table(static_cast<size_t>(kVocab * row_bytes));
    std::vector<float> expected(values.size());
    for (int64_t r = 0; r < kVocab; ++r) {
      sdk::gguf::quantize_row(dtype, values.data() + r * kDim, table.data() + r * row_bytes, kDim);
      sdk::gguf::dequantize_row(dtype, table.data() + r * row_bytes, expected.data() + r * kDim, kDim);
    }
    const std::vector<int32_t> ids = {6, 0, 3, 3, 1};
    std::vector<float> out(ids.size() * kDim);
    cpu::embedding(table_view(table.data(), dtype, kVocab, kDim), ids, out.data(), &pool);
    for (size_t t = 0; t < ids.size(); ++t)
      for (int64_t i = 0; i < kDim; ++i)
        ASSERT_EQ(out[t * kDim + i], expected[ids[t] * kDim + i]) << "dtype " << dtype << " token " << t << " i " << i;
  }
}

TEST(EmbeddingBlocks, RefusesRowsThatAreNotWholeBlocks) {
  std::vector<uint8_t> table(1024);
  const std::vector<int32_t> ids = {0};
  std::vector<float> out(128);
  EXPECT_THROW(cpu::embedding(table_view(table.data(), LOOM_DTYPE_Q6_K, 2, 128), ids, out.data(), nullptr), Error);
  // ggml type 16 (iq2_xxs): known to the type table, no block codec in the SDK.
  EXPECT_THROW(cpu::embedding(table_view(table.data(), static_cast<loom_dtype>(16), 2, 256), ids, out.data(), nullptr),
               Error);
}

}  // namespace
}  // namespace loom
