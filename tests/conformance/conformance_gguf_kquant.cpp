// GGUF K-quants (sdk_gguf_kquants.hpp and quantization/gguf's kernels):
//   - for Q2_K, Q3_K, Q5_K and IQ4_XS, the SDK's quantizer gives llama.cpp's
//     quantize_row_*_ref bytes, and its dequantizer llama.cpp's values, bit for bit, on vectors
//     made from llama.cpp (tests/data/gguf_kquants, tools/convert/gguf_kquant_vectors.py; random
//     block bytes too; Q4_K and Q6_K have hand-built blocks in test_formats_gguf_blocks.cpp);
//   - for those and Q4_K, Q6_K, every kernel set this CPU runs (portable, AVX2, AVX-512 natively
//     where the CPU has AVX512-BW/VNNI, and emulated through SIMDe on any AVX2 CPU) computes
//     x_q8k . W against the dequantized product of the same quantized operands within float
//     rounding, gives a row the same bits alone and in any batch, and the sets agree with each
//     other bit for bit (each super-block's sum is an exact int32 folded by one shared scalar
//     expression).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>
#include <random>
#include <string>
#include <vector>

#include "gguf_kernels.hpp"
#include "loom/sdk_dtype.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace {

namespace g = loom::sdk::gguf;

constexpr loom_dtype kTypes[] = {LOOM_DTYPE_Q2_K, LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q5_K, LOOM_DTYPE_IQ4_XS};
constexpr loom_dtype kKernelTypes[] = {LOOM_DTYPE_Q2_K, LOOM_DTYPE_Q3_K, LOOM_DTYPE_Q4_K,
                                       LOOM_DTYPE_Q5_K, LOOM_DTYPE_Q6_K, LOOM_DTYPE_IQ4_XS};

std::vector<uint8_t> read_file(const std::string& name) {
  const std::string path = std::string(LOOM_TEST_DATA) + "/gguf_kquants/" + name;
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

std::vector<float> as_floats(const std::vector<uint8_t>& bytes) {
  std::vector<float> v(bytes.size() / 4);
  std::memcpy(v.data(), bytes.data(), v.size() * 4);
  return v;
}

TEST(GgufKQuantVectors, QuantizeAndDequantizeAsLlamaCpp) {
  const std::vector<float> x = as_floats(read_file("in.f32"));
  ASSERT_EQ(x.size(), 4u * 256);
  for (const loom_dtype t : kTypes) {
    const std::string name = loom::sdk::type_name(t);
    const g::BlockGeometry geo = g::block_geometry(t);
    ASSERT_EQ(geo.values, 256) << name;
    ASSERT_EQ(geo.bytes, loom::sdk::dtype_info(t).block_bytes) << name;
    const auto n = static_cast<int64_t>(x.size());
    const std::vector<uint8_t> expected_q = read_file(name + ".q.bin");
    ASSERT_EQ(static_cast<int64_t>(expected_q.size()), n / 256 * geo.bytes) << name;
    std::vector<uint8_t> q(expected_q.size(), 0xAA);
    ASSERT_TRUE(g::quantize_row(t, x.data(), q.data(), n));
    for (size_t i = 0; i < q.size(); ++i)
      ASSERT_EQ(q[i], expected_q[i]) << name << ": byte " << i << " (super-block " << i / geo.bytes << ")";
    for (const std::string& which : {std::string(".q.bin"), std::string(".rand.bin")}) {
      const std::vector<uint8_t> blocks = read_file(name + which);
      const std::vector<float> expected = as_floats(read_file(name + (which == ".q.bin" ? ".deq.f32" : ".rand.f32")));
      ASSERT_EQ(static_cast<int64_t>(expected.size()), static_cast<int64_t>(blocks.size()) / geo.bytes * 256) << name;
      std::vector<float> y(expected.size(), NAN);
      ASSERT_TRUE(g::dequantize_row(t, blocks.data(), y.data(), static_cast<int64_t>(y.size())));
      for (size_t i = 0; i < y.size(); ++i)
        ASSERT_EQ(std::memcmp(&y[i], &expected[i], 4), 0)
            << name << which << ": value " << i << " " << y[i] << " vs " << expected[i];
    }
  }
}

// ---- kernels --------------------------------------------------------------------------------

struct KernelSet {
  std::string name;
  loom_gguf::KQuantKernels k;
};

std::vector<KernelSet> kernel_sets() {
  std::vector<KernelSet> sets = {{"portable", loom_gguf::portable_kquant_kernels()}};
#ifdef LOOM_GGUF_HAVE_AVX2
  if (loom_gguf::cpu_has_avx2_fma()) sets.push_back({"avx2", loom_gguf::avx2_kquant_kernels()});
  if (loom_gguf::cpu_has_avx512_kquant()) sets.push_back({"avx512", loom_gguf::avx512_kquant_kernels()});
#if LOOM_KQUANT_EMULATED
  // The AVX-512 source against SIMDe: its logic checked on any AVX2 CPU.
  if (loom_gguf::cpu_has_avx2_fma()) sets.push_back({"avx512-emulated", loom_gguf::emulated::avx512_kquant_kernels()});
#endif
#endif
  return sets;
}

loom_gguf::TileKernel kernel_for(const loom_gguf::KQuantKernels& k, loom_dtype t) {
  switch (t) {
    case LOOM_DTYPE_Q2_K:
      return k.q2_k;
    case LOOM_DTYPE_Q3_K:
      return k.q3_k;
    case LOOM_DTYPE_Q4_K:
      return k.q4_k;
    case LOOM_DTYPE_Q5_K:
      return k.q5_k;
    case LOOM_DTYPE_Q6_K:
      return k.q6_k;
    default:
      return k.iq4_xs;
  }
}

TEST(GgufKQuantKernels, EverySetMatchesTheDequantizedProductAndIsBatchInvariant) {
  struct Shape {
    int64_t n, in, out;
  };
  const std::vector<Shape> shapes = {{1, 256, 7}, {3, 512, 33}, {9, 1024, 5}, {37, 256, 12}};
  const std::vector<KernelSet> sets = kernel_sets();
  std::mt19937_64 rng(41);
  std::normal_distribution<float> nd(0.0f, 1.0f);
  for (const loom_dtype t : kKernelTypes) {
    const std::string name = loom::sdk::type_name(t);
    const g::BlockGeometry geo = g::block_geometry(t);
    for (const Shape& s : shapes) {
      const int64_t nb = s.in / 256, row_bytes = nb * geo.bytes;
      const int64_t xq_row_bytes = nb * static_cast<int64_t>(sizeof(g::BlockQ8_K));
      // Weights: gaussian rows, some with large scales, one all zero; their exact f32 values.
      std::vector<float> wf(static_cast<size_t>(s.in)), wd(static_cast<size_t>(s.out * s.in));
      std::vector<uint8_t> w(static_cast<size_t>(s.out * row_bytes));
      for (int64_t o = 0; o < s.out; ++o) {
        for (auto& e : wf) e = o == 2 ? 0.0f : nd(rng) * (o % 3 == 0 ? 30.0f : 0.05f);
        uint8_t* row = w.data() + o * row_bytes;
        g::quantize_row(t, wf.data(), row, s.in);
        // Row 1 of Q4_K and Q6_K: random bytes under small finite scales, so every code, scale
        // and min occurs (Q6_K's int8 scales down to -128), not only those a quantizer writes.
        if (o == 1 && (t == LOOM_DTYPE_Q4_K || t == LOOM_DTYPE_Q6_K)) {
          for (int64_t i = 0; i < row_bytes; ++i) row[i] = static_cast<uint8_t>(rng());
          for (int64_t b = 0; b < nb; ++b) {
            if (t == LOOM_DTYPE_Q4_K) {
              auto* blk = reinterpret_cast<g::BlockQ4_K*>(row) + b;
              blk->d = loom::sdk::f32_to_f16(0.01f);
              blk->dmin = loom::sdk::f32_to_f16(0.02f);
            } else {
              reinterpret_cast<g::BlockQ6_K*>(row)[b].d = loom::sdk::f32_to_f16(0.003f);
            }
          }
        }
        g::dequantize_row(t, row, wd.data() + o * s.in, s.in);
      }
      std::vector<float> x(static_cast<size_t>(s.in)), xd(static_cast<size_t>(s.n * s.in));
      std::vector<uint8_t> xq(static_cast<size_t>(s.n * xq_row_bytes));
      for (int64_t r = 0; r < s.n; ++r) {
        for (auto& e : x) e = nd(rng);
        auto* a = reinterpret_cast<g::BlockQ8_K*>(xq.data() + r * xq_row_bytes);
        g::quantize_q8_k(x.data(), a, nb);
        g::dequantize_q8_k(a, xd.data() + r * s.in, nb);
      }
      std::vector<float> first;
      for (const KernelSet& set : sets) {
        const loom_gguf::TileKernel kernel = kernel_for(set.k, t);
        std::vector<float> y(static_cast<size_t>(s.n * s.out), NAN);
        kernel(w.data(), row_bytes, s.out, xq.data(), xq_row_bytes, s.n, s.in, y.data(), s.out);
        const std::string where = set.name + " " + name + " n=" + std::to_string(s.n) + " in=" + std::to_string(s.in);
        for (int64_t r = 0; r < s.n; ++r) {
          for (int64_t o = 0; o < s.out; ++o) {
            double ref = 0, mag = 0;
            for (int64_t i = 0; i < s.in; ++i) {
              const double p = double{xd[static_cast<size_t>(r * s.in + i)]} * wd[static_cast<size_t>(o * s.in + i)];
              ref += p;
              mag += std::abs(p);
            }
            // Exact integer sums; only the per-super-block float products round.
            ASSERT_NEAR(y[static_cast<size_t>(r * s.out + o)], ref, 1e-5 * mag + 1e-30)
                << where << " [" << r << ", " << o << "]";
          }
          // The row alone, and its weight rows split into tiles of 1 and of 4: the same bits.
          std::vector<float> alone(static_cast<size_t>(s.out), NAN);
          kernel(w.data(), row_bytes, s.out, xq.data() + r * xq_row_bytes, xq_row_bytes, 1, s.in, alone.data(), s.out);
          for (int64_t o0 = 0; o0 < s.out; o0 += 4) {
            std::vector<float> part(4, NAN);
            kernel(w.data() + o0 * row_bytes, row_bytes, std::min<int64_t>(4, s.out - o0), xq.data() + r * xq_row_bytes,
                   xq_row_bytes, 1, s.in, part.data(), 4);
            ASSERT_EQ(
                std::memcmp(part.data(), alone.data() + o0, static_cast<size_t>(std::min<int64_t>(4, s.out - o0)) * 4),
                0)
                << where << " row " << r << " tile at " << o0;
          }
          ASSERT_EQ(std::memcmp(alone.data(), y.data() + r * s.out, static_cast<size_t>(s.out) * 4), 0)
              << where << ": row " << r << " alone differs from the batch";
        }
        if (first.empty()) {
          first = y;
        } else {
          ASSERT_EQ(std::memcmp(first.data(), y.data(), y.size() * 4), 0) << where << " differs from " << sets[0].name;
        }
      }
    }
  }
}

}  // namespace
