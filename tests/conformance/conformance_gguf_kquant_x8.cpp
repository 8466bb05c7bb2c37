// quantization/gguf's Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS kernels on the K-quant x8 layout
// (gguf_kquant_x8.hpp): AVX2, AVX-512 (BW/VL/VNNI: two groups per zmm, a lone group in ymm)
// natively where the CPU has it and through SIMDe's emulation on any AVX2 CPU. The layout promises the portable file-layout kernels' bits (which
// conformance_gguf_kquant.cpp checks against the dequantized product), so every packed set must
// give exactly those bits: for every n (the register blocks of 8 and 4 rows and every tail),
// partial groups, any split of the groups into tiles, and each row alone.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_kquant_x8.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace {

namespace g = loom::sdk::gguf;

#ifdef LOOM_GGUF_HAVE_AVX2

constexpr loom_dtype kTypes[] = {LOOM_DTYPE_Q2_K, LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q4_K,
                                 LOOM_DTYPE_Q5_K, LOOM_DTYPE_Q6_K, LOOM_DTYPE_IQ4_XS};

struct Shape {
  int64_t n, in, out;
};
const std::vector<Shape> kShapes = {{1, 256, 8},  {1, 512, 37}, {2, 256, 16}, {3, 768, 13}, {4, 256, 24},
                                    {5, 512, 40}, {8, 256, 17}, {9, 256, 7},  {13, 512, 33}, {17, 256, 9}};

struct Problem {
  loom_dtype dtype;
  Shape s;
  int64_t nb, row_bytes, xq_row_bytes;
  std::vector<uint8_t> rows, xq;
  std::vector<int32_t> side;
  std::vector<float> expected;  // the portable kernel's output [n, out]

  Problem(loom_dtype t, Shape shape, std::mt19937_64& rng) : dtype(t), s(shape) {
    std::normal_distribution<float> nd(0.0f, 1.0f);
    nb = s.in / g::kQKK;
    row_bytes = nb * g::block_geometry(t).bytes;
    xq_row_bytes = nb * static_cast<int64_t>(sizeof(g::BlockQ8_K));
    rows.resize(static_cast<size_t>(s.out * row_bytes));
    std::vector<float> wf(static_cast<size_t>(s.in));
    for (int64_t o = 0; o < s.out; ++o) {
      uint8_t* row = rows.data() + o * row_bytes;
      for (auto& e : wf) e = o % 7 == 2 ? 0.0f : nd(rng) * (o % 3 == 0 ? 30.0f : 0.05f) + (o % 4 == 1 ? 0.3f : 0.0f);
      g::quantize_row(t, wf.data(), row, s.in);
      // Every third row: random bytes under small finite scales, so every code, scale, min and
      // high bit occurs (Q6_K's int8 scales down to -128), not only those a quantizer writes.
      if (o % 3 == 1) {
        for (int64_t i = 0; i < row_bytes; ++i) row[i] = static_cast<uint8_t>(rng());
        for (int64_t b = 0; b < nb; ++b) {
          if (t == LOOM_DTYPE_Q6_K) {
            reinterpret_cast<g::BlockQ6_K*>(row)[b].d = loom::sdk::f32_to_f16(0.003f);
          } else if (t == LOOM_DTYPE_IQ4_XS) {
            reinterpret_cast<g::BlockIQ4_XS*>(row)[b].d = loom::sdk::f32_to_f16(0.002f);
          } else if (t == LOOM_DTYPE_Q3_K) {
            reinterpret_cast<g::BlockQ3_K*>(row)[b].d = loom::sdk::f32_to_f16(0.004f);
          } else if (t == LOOM_DTYPE_Q2_K) {
            reinterpret_cast<g::BlockQ2_K*>(row)[b].d = loom::sdk::f32_to_f16(0.01f);
            reinterpret_cast<g::BlockQ2_K*>(row)[b].dmin = loom::sdk::f32_to_f16(0.02f);
          } else {  // Q4_K and Q5_K keep d and dmin first
            auto* blk = reinterpret_cast<g::BlockQ4_K*>(row + b * g::block_geometry(t).bytes);
            blk->d = loom::sdk::f32_to_f16(0.01f);
            blk->dmin = loom::sdk::f32_to_f16(0.02f);
          }
        }
      }
    }
    xq.resize(static_cast<size_t>(s.n * xq_row_bytes));
    std::vector<float> x(static_cast<size_t>(s.in));
    for (int64_t r = 0; r < s.n; ++r) {
      for (auto& e : x) e = nd(rng) * (r % 2 == 0 ? 1.0f : 7.0f);
      g::quantize_q8_k(x.data(), reinterpret_cast<g::BlockQ8_K*>(xq.data() + r * xq_row_bytes), nb);
    }
    side.resize(static_cast<size_t>(s.n * nb * loom_gguf::kKQuantSide));
    loom_gguf::kquant_activation_info(xq.data(), xq_row_bytes, s.n, nb, side.data());
    const loom_gguf::KQuantKernels portable = loom_gguf::portable_kquant_kernels();
    const loom_gguf::TileKernel tile = t == LOOM_DTYPE_Q2_K   ? portable.q2_k
                                       : t == LOOM_DTYPE_Q3_K ? portable.q3_k
                                       : t == LOOM_DTYPE_Q4_K ? portable.q4_k
                                       : t == LOOM_DTYPE_Q5_K ? portable.q5_k
                                       : t == LOOM_DTYPE_Q6_K ? portable.q6_k
                                                              : portable.iq4_xs;
    expected.assign(static_cast<size_t>(s.n * s.out), NAN);
    tile(rows.data(), row_bytes, s.out, xq.data(), xq_row_bytes, s.n, s.in, expected.data(), s.out);
  }
};

void check_set(const loom_gguf::KQuantPackedKernels& set, const std::string& name) {
  std::mt19937_64 rng(77);
  for (const loom_dtype t : kTypes) {
    for (const Shape& s : kShapes) {
      const Problem p(t, s, rng);
      const std::string where = name + " " + loom::sdk::type_name(t) + " n=" + std::to_string(s.n) +
                                " in=" + std::to_string(s.in) + " out=" + std::to_string(s.out);
      const loom_gguf::PackedWeight w = loom_gguf::pack_kquant(t, p.rows.data(), p.row_bytes, s.out, p.nb);
      ASSERT_EQ(w.quant_bytes, loom_gguf::kquant_x8_record_bytes(t));
      const loom_gguf::KQuantPackedKernel kernel = set.of(t);
      const int64_t groups = (s.out + 7) / 8;
      // The whole batch over all groups at once.
      std::vector<float> y(static_cast<size_t>(s.n * s.out), NAN);
      kernel(w, 0, groups, p.xq.data(), p.xq_row_bytes, p.side.data(), s.n, y.data(), s.out);
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(std::memcmp(&y[i], &p.expected[i], 4), 0)
            << where << " [" << i / s.out << ", " << i % s.out << "]: " << y[i] << " vs portable " << p.expected[i];
      // One group per call (tiles), and each row alone: the same bits.
      std::vector<float> split(static_cast<size_t>(s.n * s.out), NAN);
      for (int64_t grp = 0; grp < groups; ++grp)
        kernel(w, grp, grp + 1, p.xq.data(), p.xq_row_bytes, p.side.data(), s.n, split.data() + 8 * grp, s.out);
      ASSERT_EQ(std::memcmp(split.data(), p.expected.data(), split.size() * 4), 0) << where << ": split into groups";
      for (int64_t r = 0; r < s.n; ++r) {
        std::vector<float> alone(static_cast<size_t>(s.out), NAN);
        kernel(w, 0, groups, p.xq.data() + r * p.xq_row_bytes, p.xq_row_bytes,
               p.side.data() + r * p.nb * loom_gguf::kKQuantSide, 1, alone.data(), s.out);
        ASSERT_EQ(std::memcmp(alone.data(), p.expected.data() + r * s.out, alone.size() * 4), 0)
            << where << ": row " << r << " alone";
      }
    }
  }
}

bool cpu_has_avx2() { return loom_gguf::cpu_has_avx2_fma(); }

TEST(GgufKQuantX8, Avx2GivesThePortableBits) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C";
  check_set(loom_gguf::avx2_kquant_x8_kernels(), "avx2");
}

TEST(GgufKQuantX8, Avx512NativeGivesThePortableBits) {
  if (!loom_gguf::cpu_has_avx512_kquant())
    GTEST_SKIP() << "this CPU lacks AVX512-BW/VL/VNNI; Avx512Emulated covers the kernels";
  check_set(loom_gguf::avx512_kquant_x8_kernels(), "avx512");
}

#if LOOM_KQUANT_EMULATED
TEST(GgufKQuantX8, Avx512EmulatedGivesThePortableBits) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C CPUs";
  check_set(loom_gguf::emulated::avx512_kquant_x8_kernels(), "avx512-emulated");
}
#endif

// The record holds the file's values: its size is the file's bytes plus 4 per row for Q3_K, Q4_K
// and Q5_K (scales and mins unpacked to bytes), 2 for IQ4_XS, the file's exactly for Q2_K and
// Q6_K.
TEST(GgufKQuantX8, RecordSizes) {
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_Q2_K), 8 * 84);
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_Q3_K), 8 * (110 + 4));
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_Q4_K), 8 * (144 + 4));
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_Q5_K), 8 * (176 + 4));
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_Q6_K), 8 * 210);
  EXPECT_EQ(loom_gguf::kquant_x8_record_bytes(LOOM_DTYPE_IQ4_XS), 8 * (136 + 2));
}

#endif  // LOOM_GGUF_HAVE_AVX2

}  // namespace
