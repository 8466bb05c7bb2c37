// quantization/gguf's Q4_1, Q5_0, Q5_1 and IQ4_NL kernels (gguf_legacy_kernels.hpp), every set:
// portable (file layout), AVX2 (legacy x8 layout), AVX512-VNNI natively where the CPU has it and
// through SIMDe's emulation on any AVX2 CPU. Each against a double GEMM on the dequantized
// weights (only the activation quantization separates them), each row's bits alone == in the
// batch, and the VNNI kernels == the AVX2 ones bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf_legacy_kernels.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace {

namespace g = loom::sdk::gguf;
using loom_gguf::LegacyPackedKernel;
using loom_gguf::LegacyPackedKernels;

constexpr loom_dtype kTypes[] = {LOOM_DTYPE_Q4_1, LOOM_DTYPE_Q5_0, LOOM_DTYPE_Q5_1, LOOM_DTYPE_IQ4_NL};

struct Shape {
  int64_t n, in, out;
};
// n: the 4-row register block and every tail, and decode (pairs of full groups, then a short
// group); out: partial groups.
const std::vector<Shape> kShapes = {{1, 64, 8},  {1, 256, 37}, {2, 96, 16},  {3, 128, 13},
                                    {4, 64, 24}, {5, 512, 40}, {9, 160, 7}, {17, 256, 33}};

// One problem: weights (some rows with large scales), their dequantized values, activations
// quantized as the kernels take them, and their per-block floats.
struct Problem {
  loom_dtype dtype;
  Shape s;
  std::vector<uint8_t> rows;
  std::vector<float> deq, x;
  int64_t nb, row_bytes, xq_row_bytes;
  std::vector<uint8_t> xq;
  std::vector<float> d, sa;
  std::vector<int32_t> off;

  Problem(loom_dtype t, Shape shape, std::mt19937_64& rng) : dtype(t), s(shape) {
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    const g::BlockGeometry geo = g::block_geometry(t);
    nb = s.in / g::kQK;
    row_bytes = nb * geo.bytes;
    rows.resize(static_cast<size_t>(s.out * row_bytes));
    deq.resize(static_cast<size_t>(s.out * s.in));
    std::vector<float> wf(static_cast<size_t>(s.in));
    for (int64_t o = 0; o < s.out; ++o) {
      for (auto& e : wf) e = u(rng) * (o % 5 == 0 ? 40.0f : 1.0f) + (o % 3 == 0 ? 0.5f : 0.0f);
      g::quantize_row(t, wf.data(), rows.data() + o * row_bytes, s.in);
      g::dequantize_row(t, rows.data() + o * row_bytes, deq.data() + o * s.in, s.in);
    }
    x.resize(static_cast<size_t>(s.n * s.in));
    for (auto& e : x) e = u(rng);
    const bool q8_1 = loom_gguf::legacy_takes_q8_1(t);
    xq_row_bytes = nb * static_cast<int64_t>(q8_1 ? sizeof(g::BlockQ8_1) : sizeof(g::BlockQ8_0));
    xq.resize(static_cast<size_t>(s.n * xq_row_bytes));
    for (int64_t r = 0; r < s.n; ++r) {
      uint8_t* dst = xq.data() + r * xq_row_bytes;
      if (q8_1) {
        g::quantize_q8_1(x.data() + r * s.in, reinterpret_cast<g::BlockQ8_1*>(dst), nb);
      } else {
        g::quantize_q8_0(x.data() + r * s.in, reinterpret_cast<g::BlockQ8_0*>(dst), nb);
      }
    }
    d.resize(static_cast<size_t>(s.n * nb));
    sa.resize(d.size());
    off.resize(d.size());
    loom_gguf::legacy_activation_info(q8_1, xq.data(), xq_row_bytes, s.n, nb, info());
  }
  loom_gguf::LegacyActivationInfo info() { return {d.data(), sa.data(), off.data()}; }

  // Activation rows [t0, t0 + n) through a kernel on the packed rows.
  std::vector<float> run_packed(LegacyPackedKernel k, const loom_gguf::PackedWeight& w, int64_t t0, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n * s.out), NAN);
    const int64_t groups = (s.out + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
    loom_gguf::LegacyActivationInfo at = info();
    at.d += t0 * nb;
    at.s += t0 * nb;
    at.offset += t0 * nb;
    k(w, 0, groups, xq.data() + t0 * xq_row_bytes, xq_row_bytes, at, n, y.data(), s.out);
    return y;
  }
  std::vector<float> run_tile(loom_gguf::TileKernel k, int64_t t0, int64_t n) {
    std::vector<float> y(static_cast<size_t>(n * s.out), NAN);
    k(rows.data(), row_bytes, s.out, xq.data() + t0 * xq_row_bytes, xq_row_bytes, n, s.in, y.data(), s.out);
    return y;
  }

  // |y - x dequant(W)^T| <= tol * sum |x_i w_i| for every element.
  void expect_close(const std::vector<float>& y, const std::string& what) const {
    for (int64_t t = 0; t < s.n; ++t) {
      for (int64_t o = 0; o < s.out; ++o) {
        double ref = 0, mag = 0;
        for (int64_t i = 0; i < s.in; ++i) {
          const double p = double(x[static_cast<size_t>(t * s.in + i)]) * deq[static_cast<size_t>(o * s.in + i)];
          ref += p;
          mag += std::abs(p);
        }
        ASSERT_NEAR(y[static_cast<size_t>(t * s.out + o)], ref, 3e-3 * mag)
            << what << " " << loom::sdk::type_name(dtype) << " n " << s.n << " in " << s.in << " out " << s.out
            << " at [" << t << ", " << o << "]";
      }
    }
  }
};

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

loom_gguf::TileKernel portable_of(loom_dtype t) {
  const loom_gguf::LegacyKernels k = loom_gguf::legacy_portable_kernels();
  return t == LOOM_DTYPE_Q4_1 ? k.q4_1 : t == LOOM_DTYPE_Q5_0 ? k.q5_0 : t == LOOM_DTYPE_Q5_1 ? k.q5_1 : k.iq4_nl;
}

TEST(GgufLegacyKernels, PortableMatchesDequantizedGemmAndIsBatchInvariant) {
  std::mt19937_64 rng(3);
  for (const loom_dtype t : kTypes) {
    for (const Shape& s : kShapes) {
      Problem p(t, s, rng);
      const std::vector<float> y = p.run_tile(portable_of(t), 0, s.n);
      p.expect_close(y, "portable");
      for (int64_t r = 0; r < s.n; ++r) {
        const std::vector<float> alone = p.run_tile(portable_of(t), r, 1);
        ASSERT_EQ(std::memcmp(alone.data(), y.data() + r * s.out, alone.size() * sizeof(float)), 0)
            << "portable " << loom::sdk::type_name(t) << " row " << r << " of n " << s.n;
      }
    }
  }
}

#ifdef LOOM_GGUF_HAVE_AVX2

// Every kernel of `set` against the double GEMM, batch-invariant, and equal to the AVX2 kernels.
void check_x8(const LegacyPackedKernels& set, const char* what) {
  std::mt19937_64 rng(9);
  const LegacyPackedKernels avx2 = loom_gguf::avx2_legacy_x8_kernels();
  for (const loom_dtype t : kTypes) {
    for (const Shape& s : kShapes) {
      Problem p(t, s, rng);
      const loom_gguf::PackedWeight w = loom_gguf::pack_legacy(t, p.rows.data(), p.row_bytes, s.out, p.nb);
      const std::vector<float> y = p.run_packed(set.of(t), w, 0, s.n);
      p.expect_close(y, what);
      for (int64_t r = 0; r < s.n; ++r) {
        const std::vector<float> alone = p.run_packed(set.of(t), w, r, 1);
        ASSERT_EQ(std::memcmp(alone.data(), y.data() + r * s.out, alone.size() * sizeof(float)), 0)
            << what << " " << loom::sdk::type_name(t) << " row " << r << " of n " << s.n;
      }
      EXPECT_TRUE(same_bits(y, p.run_packed(avx2.of(t), w, 0, s.n)))
          << what << " vs avx2 " << loom::sdk::type_name(t) << " n " << s.n << " in " << s.in << " out " << s.out;
    }
  }
}

bool cpu_has_avx2() { return loom_gguf::cpu_has_avx2_fma(); }

TEST(GgufLegacyKernels, Avx2) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C";
  check_x8(loom_gguf::avx2_legacy_x8_kernels(), "avx2");
}

TEST(GgufLegacyKernels, VnniNative) {
  if (!loom_gguf::cpu_has_avx512_vnni())
    GTEST_SKIP() << "this CPU has no AVX512-VNNI (+VL); VnniEmulated covers the kernels";
  check_x8(loom_gguf::vnni_legacy_x8_kernels(), "vnni");
}

TEST(GgufLegacyKernels, VnniEmulated) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C CPUs";
  check_x8(loom_gguf::emulated::vnni_legacy_x8_kernels(), "vnni (emulated)");
}

// The plugin's Q8_1 path (a SIMD Q8_0 quantizer plus the sum) gives the SDK's bits.
TEST(GgufLegacyKernels, Q8_1FromTheSimdQuantizerIsTheSdks) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "this CPU has no AVX2/FMA/F16C";
  std::mt19937_64 rng(12);
  std::uniform_real_distribution<float> u(-3.0f, 3.0f);
  std::vector<float> x(32 * 9);
  for (auto& e : x) e = u(rng);
  std::vector<g::BlockQ8_1> a(9), b(9);
  loom_gguf::quantize_q8_1(loom_gguf::avx2_kernels().quantize_q8_0, x.data(), a.data(), 9);
  g::quantize_q8_1(x.data(), b.data(), 9);
  EXPECT_EQ(std::memcmp(a.data(), b.data(), 9 * sizeof(g::BlockQ8_1)), 0);
}

#endif  // LOOM_GGUF_HAVE_AVX2

}  // namespace
