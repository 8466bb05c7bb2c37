// Encoded KV pools: the block layout (data, padding, scales) in KvPool's views and block copies,
// the fp8 E4M3 codec, and the scale schemes of loom/sdk_kv_quant.hpp (int8: a block's first row
// sets the block-head scale, a larger row raises it and re-encodes the rows before; fp8: every
// (token, head) row has its own f16 scale, amax / 448 rounded up).
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/common/error.hpp"
#include "core/engine/kv_block_copy.hpp"
#include "core/executor/kv_pool.hpp"
#include "loom/sdk_kv_quant.hpp"

namespace loom {
namespace {

namespace kv = sdk::kv;

TEST(KvQuantLayout, BlockBytesAndScaleOffsets) {
  // [16, 2, 8] int8 = 256 bytes of data, then 2 f32 scales.
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_I8, 16, 2, 8), 256 + 8);
  EXPECT_EQ(kv::scales_offset(LOOM_DTYPE_I8, 16, 2, 8), 256);
  // [16, 2, 8] fp8 = 256 bytes of data, then [16, 2] f16 scales, one per (slot, head).
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_FP8_E4M3, 16, 2, 8), 256 + 64);
  EXPECT_EQ(kv::scale_offset_of(LOOM_DTYPE_FP8_E4M3, 16, 2, 8, 3, 1), 256 + (3 * 2 + 1) * 2);
  EXPECT_EQ(kv::scale_offset_of(LOOM_DTYPE_I8, 16, 2, 8, 3, 1), 256 + 4);  // the block-head's, any slot
  EXPECT_EQ(kv::scale_bytes_per_block(LOOM_DTYPE_FP8_E4M3, 16, 2, 8), 64);
  EXPECT_EQ(kv::scale_bytes_per_block(LOOM_DTYPE_I8, 16, 2, 8), 8);
  EXPECT_EQ(kv::scale_bytes_per_block(LOOM_DTYPE_F16, 16, 2, 8), 0);
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_FP8_E4M3, 3, 1, 5), 16 + 3 * 2);
  EXPECT_EQ(kv::scale_bytes_per_token(LOOM_DTYPE_FP8_E4M3, 2), 4);
  EXPECT_EQ(kv::scale_bytes_per_token(LOOM_DTYPE_I8, 2), 0);
  // 3 x 1 x 5 = 15 bytes of data pad to 16 so the scale is 4-byte aligned.
  EXPECT_EQ(kv::scales_offset(LOOM_DTYPE_I8, 3, 1, 5), 16);
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_I8, 3, 1, 5), 20);
  // No scales for the float dtypes: their blocks are exactly the data.
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_F16, 16, 2, 8), 512);
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_BF16, 16, 2, 8), 512);
  EXPECT_EQ(kv::block_bytes(LOOM_DTYPE_F32, 16, 2, 8), 1024);
  EXPECT_EQ(kv::dtype_from_name("int8"), LOOM_DTYPE_I8);
  EXPECT_EQ(kv::dtype_from_name("fp8_e4m3"), LOOM_DTYPE_FP8_E4M3);
  EXPECT_EQ(kv::dtype_from_name("q8_0"), LOOM_DTYPE_INVALID);
  EXPECT_EQ(KvPool::scale_bytes_per_block(3, 2, LOOM_DTYPE_I8), 2 * 3 * 2 * 4);
  EXPECT_EQ(KvPool::scale_bytes_per_block(3, 2, LOOM_DTYPE_F16), 0);
  // fp8's scales are per token: counted in bytes_per_token, so the budget matches the blocks.
  EXPECT_EQ(KvPool::scale_bytes_per_block(3, 2, LOOM_DTYPE_FP8_E4M3), 0);
  EXPECT_EQ(KvPool::bytes_per_token(3, 2, 8, LOOM_DTYPE_FP8_E4M3), 2 * 3 * (2 * 8 + 2 * 2));
  for (loom_dtype d : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_I8, LOOM_DTYPE_FP8_E4M3}) {
    EXPECT_EQ(16 * KvPool::bytes_per_token(3, 2, 8, d) + KvPool::scale_bytes_per_block(3, 2, d),
              2 * 3 * kv::block_bytes(d, 16, 2, 8))
        << d;
  }
}

TEST(KvQuantLayout, PoolViewsStrideWholeBlocks) {
  KvPool pool(KvPoolShape{2, 5, 16, 2, 8, LOOM_DTYPE_I8});
  EXPECT_EQ(pool.block_bytes(), 264);
  EXPECT_GE(pool.total_bytes(), 2 * 2 * 5 * 264);
  const loom_tensor_view& k = pool.k(1);
  EXPECT_EQ(k.dtype, LOOM_DTYPE_I8);
  EXPECT_EQ(k.shape[0], 5);
  EXPECT_EQ(k.shape[1], 16);
  EXPECT_EQ(k.strides[0], 264);  // elements of one byte: data + scales
  EXPECT_EQ(k.strides[1], 16);
  EXPECT_EQ(k.strides[2], 8);
  KvPool half(KvPoolShape{1, 5, 16, 2, 8, LOOM_DTYPE_F16});
  EXPECT_EQ(half.k(0).strides[0], 16 * 2 * 8);
  EXPECT_THROW(KvPool(KvPoolShape{1, 5, 16, 2, 8, LOOM_DTYPE_U8}), Error);
}

TEST(KvQuantLayout, BlockCopiesCarryTheScales) {
  KvPool pool(KvPoolShape{2, 3, 4, 1, 4, LOOM_DTYPE_I8});  // blocks of 16 + 4 bytes
  const float row[4] = {1.0f, -2.0f, 0.5f, 0.25f};
  for (int32_t l = 0; l < 2; ++l) {
    for (loom_tensor_view* v : {&pool.k(l), &pool.v(l)})
      kv::write_row(LOOM_DTYPE_I8, static_cast<char*>(v->data) + 20, 0, 0, row, 4, 1, 4);  // block 1
  }
  pool.copy_block(1, 2);
  for (int32_t l = 0; l < 2; ++l) {
    for (loom_tensor_view* v : {&pool.k(l), &pool.v(l)}) {
      const char* base = static_cast<const char*>(v->data);
      EXPECT_EQ(std::memcmp(base + 20, base + 40, 20), 0) << "layer " << l;
      float scale;
      std::memcpy(&scale, base + 40 + 16, 4);
      EXPECT_EQ(scale, 2.0f / 127.0f);
    }
  }
  // The host-tier copy ops move the same bytes: 2 layers x K, V x 20.
  EXPECT_EQ(make_kv_copy_ops(pool).bytes_per_block, 2 * 2 * 20);
}

TEST(KvQuantCodec, Fp8E4m3RoundsToNearestEvenAndSaturates) {
  EXPECT_EQ(kv::f32_to_fp8_e4m3(1.0f), 0x38);
  EXPECT_EQ(kv::f32_to_fp8_e4m3(-1.0f), 0xb8);
  EXPECT_EQ(kv::f32_to_fp8_e4m3(448.0f), 0x7e);
  EXPECT_EQ(kv::f32_to_fp8_e4m3(1000.0f), 0x7e);  // saturates, never NaN
  EXPECT_EQ(kv::f32_to_fp8_e4m3(1.0625f), 0x38);  // halfway 1 | 1.125: to even (1)
  EXPECT_EQ(kv::f32_to_fp8_e4m3(1.1875f), 0x3a);  // halfway 1.125 | 1.25: to even (1.25)
  EXPECT_EQ(kv::f32_to_fp8_e4m3(0.001953125f), 0x01);  // 2^-9, the smallest subnormal
  EXPECT_EQ(kv::f32_to_fp8_e4m3(0.0009765625f), 0x00);  // 2^-10: halfway to 0, even
  EXPECT_EQ(kv::fp8_e4m3_to_f32(0x7e), 448.0f);
  EXPECT_EQ(kv::fp8_e4m3_to_f32(0x08), 0.015625f);  // 2^-6, the smallest normal
  EXPECT_EQ(kv::fp8_e4m3_to_f32(0x07), 7.0f / 512.0f);
  // Every finite code survives a round trip.
  for (int c = 0; c < 256; ++c) {
    if ((c & 0x7f) == 0x7f) continue;  // NaN
    EXPECT_EQ(kv::f32_to_fp8_e4m3(kv::fp8_e4m3_to_f32(static_cast<uint8_t>(c))), c) << c;
    EXPECT_EQ(kv::fp8_e4m3_table()[static_cast<size_t>(c)], kv::fp8_e4m3_to_f32(static_cast<uint8_t>(c)));
  }
}

// One int8 block-head of 4 slots x head_dim 4 (1 KV head): data 16 bytes, scale at 16.
struct Int8Block {
  std::vector<char> bytes = std::vector<char>(20, 0);
  void write(int64_t slot, std::initializer_list<float> row) {
    kv::write_row(LOOM_DTYPE_I8, bytes.data(), slot, 0, std::data(row), 4, 1, 4);
  }
  int8_t code(int64_t slot, int64_t d) const { return static_cast<int8_t>(bytes[static_cast<size_t>(slot * 4 + d)]); }
  float scale() const {
    float s;
    std::memcpy(&s, bytes.data() + 16, 4);
    return s;
  }
};

TEST(KvQuantScheme, Int8ScaleGrowsAndReencodesEarlierRows) {
  Int8Block b;
  b.write(0, {2.54f, 1.0f, -0.5f, 0.0f});  // first row: scale = 2.54 / 127
  EXPECT_EQ(b.scale(), 2.54f / 127.0f);
  EXPECT_EQ(b.code(0, 0), 127);
  EXPECT_EQ(b.code(0, 1), 50);
  EXPECT_EQ(b.code(0, 2), -25);
  EXPECT_EQ(b.code(0, 3), 0);
  b.write(1, {0.1f, 0.2f, -0.3f, 0.4f});  // smaller amax: same scale
  EXPECT_EQ(b.scale(), 2.54f / 127.0f);
  EXPECT_EQ(b.code(1, 0), 5);
  EXPECT_EQ(b.code(1, 2), -15);
  EXPECT_EQ(b.code(1, 3), 20);
  b.write(2, {3.81f, 0.0f, 0.0f, 0.0f});  // larger amax: scale 3.81 / 127, rows 0-1 re-encoded
  EXPECT_EQ(b.scale(), 3.81f / 127.0f);
  EXPECT_EQ(b.code(2, 0), 127);
  // Row 0 was 127, 50, -25 steps of 0.02: now 2.54 / 0.03 = 84.7, 33.3, -16.7 steps.
  EXPECT_EQ(b.code(0, 0), 85);
  EXPECT_EQ(b.code(0, 1), 33);
  EXPECT_EQ(b.code(0, 2), -17);
  EXPECT_EQ(b.code(0, 3), 0);
  EXPECT_EQ(b.code(1, 0), 3);    // 0.1 / 0.03 = 3.3
  EXPECT_EQ(b.code(1, 1), 7);    // 0.2 / 0.03 = 6.7
  EXPECT_EQ(b.code(1, 2), -10);  // -0.3 / 0.03
  EXPECT_EQ(b.code(1, 3), 13);   // 0.4 / 0.03 = 13.3
  float out[4];
  kv::read_row(LOOM_DTYPE_I8, b.bytes.data(), 0, 0, out, 4, 1, 4);
  EXPECT_EQ(out[0], 85.0f * (3.81f / 127.0f));
  EXPECT_EQ(out[2], -17.0f * (3.81f / 127.0f));
}

TEST(KvQuantScheme, SlotZeroStartsTheBlockAfresh) {
  Int8Block b;
  b.write(0, {100.0f, 0.0f, 0.0f, 0.0f});
  b.write(1, {1.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(b.code(1, 0), 1);  // coarse: 100 / 127 per step
  // The block is reused by another sequence: its first row sets the scale, whatever was there.
  b.write(0, {1.27f, -0.6f, 0.0f, 0.0f});
  EXPECT_EQ(b.scale(), 1.27f / 127.0f);
  EXPECT_EQ(b.code(0, 0), 127);
  EXPECT_EQ(b.code(0, 1), -60);
  // An all-zero first row gives scale 0 and zero codes; the next non-zero row sets a scale.
  b.write(0, {0.0f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(b.scale(), 0.0f);
  b.write(1, {0.5f, 0.0f, 0.0f, 0.0f});
  EXPECT_EQ(b.scale(), 0.5f / 127.0f);
  EXPECT_EQ(b.code(0, 0), 0);
  EXPECT_EQ(b.code(1, 0), 127);
}

// f16 bits at `at`.
uint16_t f16_bits(const std::vector<char>& block, size_t at) {
  uint16_t h;
  std::memcpy(&h, block.data() + at, 2);
  return h;
}

TEST(KvQuantScheme, Fp8RowsHaveTheirOwnF16ScaleMappingAmaxOnto448) {
  // 2 heads of head_dim 2, block_size 2: data 8 bytes, then f16 scales of (slot 0, head 0),
  // (0, 1), (1, 0), (1, 1) at 8, 10, 12, 14.
  std::vector<char> block(16, 0);
  const float h0[2] = {4.48f, -1.0f}, h1[2] = {0.5f, 0.25f};
  kv::write_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 0, h0, 2, 2, 2);
  kv::write_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 1, h1, 2, 2, 2);
  // 4.48 / 448 = 0.01 -> f16 2^-7 * (1 + 287/1024) = 0.0100021 (nearest, already >= 0.01).
  EXPECT_EQ(f16_bits(block, 8), 0x211f);
  // 0.5 / 448 = 2^-10 * 1.14286: the nearest f16 (mantissa 146) is below it, so one up (147).
  EXPECT_EQ(f16_bits(block, 10), 0x1493);
  EXPECT_EQ(f16_bits(block, 12), 0);  // slot 1 untouched
  const float s0 = sdk::f16_to_f32(0x211f), s1 = sdk::f16_to_f32(0x1493);
  EXPECT_EQ(static_cast<uint8_t>(block[0]), 0x7e);  // 4.48 / s0 = 447.9 -> 448, the top code
  EXPECT_EQ(static_cast<uint8_t>(block[1]), 0xec);  // -1 / s0 = -99.98 -> -96 = -1.5 * 2^6 (step 8)
  EXPECT_EQ(static_cast<uint8_t>(block[2]), 0x7e);  // 0.5 / s1 = 447.8 -> 448
  EXPECT_EQ(static_cast<uint8_t>(block[3]), 0x76);  // 0.25 / s1 = 223.9 -> 224 = 1.75 * 2^7
  float out[2];
  kv::read_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 0, out, 2, 2, 2);
  EXPECT_EQ(out[0], 448.0f * s0);
  EXPECT_EQ(out[1], -96.0f * s0);
  kv::read_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 1, out, 2, 2, 2);
  EXPECT_EQ(out[0], 448.0f * s1);
  EXPECT_EQ(out[1], 224.0f * s1);
  EXPECT_NEAR(out[0], 0.5f, 0.5f * 0x1p-10f);  // the row's amax to the f16 scale's precision
}

TEST(KvQuantScheme, Fp8RowsAreEncodedOnceFromTheOriginal) {
  // One head, head_dim 2, block_size 2: a larger row 1 leaves row 0's codes and scale alone.
  std::vector<char> block(8, 0);
  const float r0[2] = {1.0f / 8.0f, 3.0f / 64.0f}, r1[2] = {4.0f, 1.0f};
  kv::write_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 0, r0, 2, 1, 2);
  const std::vector<char> before(block.begin(), block.begin() + 2);
  const uint16_t scale0 = f16_bits(block, 4);
  kv::write_row(LOOM_DTYPE_FP8_E4M3, block.data(), 1, 0, r1, 2, 1, 2);
  EXPECT_EQ(std::vector<char>(block.begin(), block.begin() + 2), before);
  EXPECT_EQ(f16_bits(block, 4), scale0);
  EXPECT_NE(f16_bits(block, 6), scale0);
  float out[2];
  kv::read_row(LOOM_DTYPE_FP8_E4M3, block.data(), 1, 0, out, 2, 1, 2);
  EXPECT_NEAR(out[0], 4.0f, 4.0f * 0x1p-10f);
  EXPECT_NEAR(out[1], 1.0f, 1.0f / 16.0f);  // E4M3: 3 mantissa bits
  // An all-zero row: scale 0, codes 0, reads back 0.
  const float zero[2] = {0.0f, -0.0f};
  kv::write_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 0, zero, 2, 1, 2);
  EXPECT_EQ(f16_bits(block, 4), 0);
  kv::read_row(LOOM_DTYPE_FP8_E4M3, block.data(), 0, 0, out, 2, 1, 2);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], 0.0f);
}

TEST(KvQuantScheme, HalfTypesRoundEachElementOnce) {
  std::vector<char> block(2 * 1 * 4 * 2, 0);
  const float row[4] = {1.0f, 1.0f + 1.0f / 4096.0f, -65504.0f, 3.14159f};
  float out[4];
  kv::write_row(LOOM_DTYPE_F16, block.data(), 1, 0, row, 2, 1, 4);
  kv::read_row(LOOM_DTYPE_F16, block.data(), 1, 0, out, 2, 1, 4);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], 1.0f);  // below half an f16 step (2^-11): rounds to 1
  EXPECT_EQ(out[2], -65504.0f);
  EXPECT_EQ(out[3], sdk::f16_to_f32(sdk::f32_to_f16(3.14159f)));
  kv::write_row(LOOM_DTYPE_BF16, block.data(), 0, 0, row, 2, 1, 4);
  kv::read_row(LOOM_DTYPE_BF16, block.data(), 0, 0, out, 2, 1, 4);
  EXPECT_EQ(out[3], 3.140625f);  // 8 significant bits
}

}  // namespace
}  // namespace loom
