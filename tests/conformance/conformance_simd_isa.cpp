// Kernels for instruction sets beyond AVX2 give the bits of the AVX2 kernels they replace:
//   none  AVX-512F prefill tiles (none_panel_avx512.cpp) == the AVX2 packed GEMM
//   none  AVX-512F decode (none_decode_avx512.cpp), 1-8 rows == the AVX2 panel GEMM
//   gguf  AVX512-VNNI x8 kernels (gguf_kernels_vnni_x8.cpp) == the AVX2 x8 kernels, Q4_0 and Q8_0
// Each runs twice: "Native" where this CPU has the set (skipped, saying so, where it does not),
// and "Emulated" on any AVX2 CPU, the same source compiled against SIMDe's emulation of the set
// (LOOM_SIMD_EMULATE), so the kernels' logic is checked on machines without AVX-512 too.
// Equality is exact (memcmp): both compute every element with the same chain of roundings.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "gguf_kernels.hpp"
#include "gguf_repack.hpp"
#include "loom/sdk_gguf_blocks.hpp"
#include "loom/sdk_half.hpp"
#include "none_panel.hpp"

namespace {

namespace g = loom::sdk::gguf;

bool cpu_has_avx2() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// ---- none: packed GEMM ---------------------------------------------------------------------

// y [n, out] from the shared-x prefill path: every x block packed by the AVX2 pack_x, then every
// (row block, panel) computed by `gemm` in chunks of `chunk` panels.
std::vector<float> prefill(loom_none::PackedGemm gemm, const loom_none::PanelView& w, const std::vector<float>& x,
                           int64_t n, int64_t chunk = 3) {
  std::vector<float> xp(static_cast<size_t>(loom_none::packed_x_floats(n, w.in, w.dtype)));
  for (int64_t b = 0; b < loom_none::packed_x_blocks(n, w.in, w.dtype); ++b)
    loom_none::pack_x_avx2(w, x.data(), w.in, n, b, xp.data());
  std::vector<float> y(static_cast<size_t>(n * w.out), NAN);
  for (int64_t m = 0; m * loom_none::kBlockRows < n; ++m)
    for (int64_t p = 0; p < w.n_panels; p += chunk)
      gemm(w, p, std::min(w.n_panels, p + chunk), xp.data(), n, m, y.data(), w.out);
  return y;
}

// Panels of a random [out, in] weight in `dtype`; `storage` keeps them.
loom_none::PanelView random_panels(loom_dtype dtype, int64_t out, int64_t in, std::mt19937_64& rng,
                                   std::vector<uint8_t>& storage) {
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const int64_t es = loom_none::element_bytes(dtype);
  std::vector<uint8_t> src(static_cast<size_t>(out * in * es));
  for (int64_t i = 0; i < out * in; ++i) {
    const float v = u(rng);
    if (dtype == LOOM_DTYPE_F32) {
      std::memcpy(src.data() + i * 4, &v, 4);
    } else {
      const uint16_t h = dtype == LOOM_DTYPE_F16 ? loom::sdk::f32_to_f16(v) : loom::sdk::f32_to_bf16(v);
      std::memcpy(src.data() + i * 2, &h, 2);
    }
  }
  loom_none::PanelView w{dtype, out, in, (out + loom_none::kPanel - 1) / loom_none::kPanel, nullptr};
  storage.assign(static_cast<size_t>(loom_none::panel_bytes(w) * w.n_panels), 0);
  loom_none::pack_panels(src.data(), in, w, storage.data(), 0, w.n_panels);
  w.data = storage.data();
  return w;
}

void check_none(loom_none::PackedGemm candidate) {
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t n, in, out;
  };
  // Rows: every tile shape of the 24/18/12/6-row groups and a 1-5 row tail (on its own, or a
  // tail of 1-2 riding with a last tile of 6-18 rows: 7, 8, 13, 19, 20), and two row
  // blocks (kBlockRows = 144); in: one and several k blocks (512 f16/bf16, 256 f32 per block);
  // out: a partial last panel, and up to 12 whole panels so that the tail's 4-8 panel tiles run
  // (in chunks of 9 panels as well as 3).
  const std::vector<Shape> shapes = {{6, 40, 16},    {7, 40, 37},    {11, 70, 48},   {24, 300, 33},
                                     {29, 600, 40},  {47, 1030, 21}, {150, 520, 50}, {301, 64, 19},
                                     {13, 100, 200}, {8, 40, 140},   {9, 64, 130},   {16, 530, 150},
                                     {17, 90, 192},  {19, 64, 37},   {20, 530, 21},  {23, 530, 21}};
  for (const loom_dtype dtype : {LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_F32}) {
    for (const Shape& s : shapes) {
      std::vector<uint8_t> panels;
      const loom_none::PanelView w = random_panels(dtype, s.out, s.in, rng, panels);
      std::vector<float> x(static_cast<size_t>(s.n * s.in));
      for (auto& e : x) e = u(rng);
      const std::vector<float> expected = prefill(loom_none::packed_gemm_avx2, w, x, s.n);
      for (const int64_t chunk : {int64_t{3}, int64_t{9}})
        EXPECT_TRUE(same_bits(prefill(candidate, w, x, s.n, chunk), expected))
            << "dtype " << dtype << " n " << s.n << " in " << s.in << " out " << s.out << " chunk " << chunk;
    }
  }
}

TEST(NoneAvx512, Native) {
  if (!loom_none::cpu_has_avx512f()) GTEST_SKIP() << "this CPU has no AVX-512F; the Emulated test covers the kernel";
  check_none(loom_none::packed_gemm_avx512);
}

TEST(NoneAvx512, Emulated) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C CPUs";
  check_none(loom_none::emulated::packed_gemm_avx512);
}

// ---- none: decode ---------------------------------------------------------------------------

using DecodeGemm = void (*)(const loom_none::PanelView&, int64_t, int64_t, const float*, int64_t, int64_t, float*,
                            int64_t);

// 1-8 rows (every R x P register tile), x rows with a stride wider than `in`, panel ranges that
// start and end inside a P group and on the partial last panel; each against the AVX2 panel GEMM
// (decode kernel to 5 rows, row blocks from 6) on the same range.
void check_none_decode(DecodeGemm candidate) {
  std::mt19937_64 rng(11);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  struct Shape {
    int64_t in, out;
  };
  const std::vector<Shape> shapes = {{1, 16}, {40, 37}, {64, 200}, {300, 129}, {576, 264}};
  for (const loom_dtype dtype : {LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_F32}) {
    for (const Shape& s : shapes) {
      std::vector<uint8_t> storage;
      const loom_none::PanelView w = random_panels(dtype, s.out, s.in, rng, storage);
      for (int64_t n = 1; n <= loom_none::kDecodeRowsAvx512; ++n) {
        const int64_t xs = s.in + 3;
        std::vector<float> x(static_cast<size_t>(n * xs));
        for (auto& e : x) e = u(rng);
        for (const auto& [p0, p1] : std::vector<std::pair<int64_t, int64_t>>{
                 {0, w.n_panels}, {1, w.n_panels}, {0, (w.n_panels + 1) / 2}, {w.n_panels / 3, w.n_panels}}) {
          if (p0 >= p1) continue;
          std::vector<float> expected(static_cast<size_t>(n * s.out), NAN), got(expected.size(), NAN);
          std::vector<float> scratch(static_cast<size_t>(loom_none::scratch_floats(n, s.in)));
          loom_none::panel_gemm_avx2(w, p0, p1, x.data(), xs, n, expected.data(), s.out, scratch.data());
          candidate(w, p0, p1, x.data(), xs, n, got.data(), s.out);
          // NaN outside the range on both sides: memcmp compares the untouched floats too.
          EXPECT_TRUE(same_bits(got, expected)) << "dtype " << dtype << " n " << n << " in " << s.in << " out "
                                                << s.out << " panels [" << p0 << ", " << p1 << ")";
        }
      }
    }
  }
}

TEST(NoneAvx512Decode, Native) {
  if (!loom_none::cpu_has_avx512f()) GTEST_SKIP() << "this CPU has no AVX-512F; the Emulated test covers the kernel";
  check_none_decode(loom_none::decode_gemm_avx512);
}

TEST(NoneAvx512Decode, Emulated) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C CPUs";
  check_none_decode(loom_none::emulated::decode_gemm_avx512);
}

TEST(NoneAvx512Decode, MoreRowsGoToTheAvx2Kernel) {
  if (!loom_none::cpu_has_avx512f()) GTEST_SKIP() << "this CPU has no AVX-512F";
  std::mt19937_64 rng(12);
  std::vector<uint8_t> storage;
  const loom_none::PanelView w = random_panels(LOOM_DTYPE_F16, 70, 90, rng, storage);
  for (const int64_t n : {int64_t{1}, loom_none::kDecodeRowsAvx512, loom_none::kDecodeRowsAvx512 + 1, int64_t{30}}) {
    std::vector<float> x(static_cast<size_t>(n * w.in));
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    for (auto& e : x) e = u(rng);
    std::vector<float> expected(static_cast<size_t>(n * w.out)), got(expected.size());
    std::vector<float> scratch(static_cast<size_t>(loom_none::scratch_floats(n, w.in)));
    loom_none::panel_gemm_avx2(w, 0, w.n_panels, x.data(), w.in, n, expected.data(), w.out, scratch.data());
    loom_none::panel_gemm_avx512(w, 0, w.n_panels, x.data(), w.in, n, got.data(), w.out, scratch.data());
    EXPECT_TRUE(same_bits(got, expected)) << "n " << n;
  }
}

// ---- gguf: x8 kernels -----------------------------------------------------------------------

void check_gguf(loom_gguf::PackedKernel q4_0, loom_gguf::PackedKernel q8_0) {
  std::mt19937_64 rng(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  const loom_gguf::Kernels avx2 = loom_gguf::avx2_kernels();
  struct Shape {
    int64_t n, in, out;
  };
  // n: the 4-row register block and every tail, and decode (pairs of groups); out: partial groups.
  const std::vector<Shape> shapes = {{1, 64, 8}, {1, 256, 37}, {2, 96, 16}, {3, 128, 13},
                                     {4, 64, 24}, {5, 512, 40}, {9, 160, 7}, {17, 256, 33}};
  for (const loom_dtype dtype : {LOOM_DTYPE_Q4_0, LOOM_DTYPE_Q8_0}) {
    const g::BlockGeometry geo = g::block_geometry(dtype);
    for (const Shape& s : shapes) {
      const int64_t nb = s.in / g::kQK, row_bytes = nb * geo.bytes;
      std::vector<float> wf(static_cast<size_t>(s.in));
      std::vector<uint8_t> rows(static_cast<size_t>(s.out * row_bytes));
      for (int64_t o = 0; o < s.out; ++o) {
        for (auto& e : wf) e = u(rng) * (o % 5 == 0 ? 40.0f : 1.0f);  // some rows with large scales
        g::quantize_row(dtype, wf.data(), rows.data() + o * row_bytes, s.in);
      }
      const loom_gguf::PackedWeight w = (dtype == LOOM_DTYPE_Q4_0 ? loom_gguf::pack_q4_0 : loom_gguf::pack_q8_0)(
          rows.data(), row_bytes, s.out, nb);
      std::vector<float> x(static_cast<size_t>(s.n * s.in));
      for (auto& e : x) e = u(rng);
      const int64_t xq_row_bytes = nb * static_cast<int64_t>(sizeof(g::BlockQ8_0));
      std::vector<uint8_t> xq(static_cast<size_t>(s.n * xq_row_bytes));
      for (int64_t t = 0; t < s.n; ++t)
        avx2.quantize_q8_0(x.data() + t * s.in, reinterpret_cast<g::BlockQ8_0*>(xq.data() + t * xq_row_bytes), nb);
      std::vector<float> d(static_cast<size_t>(s.n * nb));
      std::vector<int32_t> off(static_cast<size_t>(s.n * nb));
      const loom_gguf::ActivationBlockInfo info{d.data(), off.data()};
      loom_gguf::activation_block_info(xq.data(), xq_row_bytes, s.n, nb, info);
      const int64_t groups = (s.out + loom_gguf::kGroupRows - 1) / loom_gguf::kGroupRows;
      auto run = [&](loom_gguf::PackedKernel k) {
        std::vector<float> y(static_cast<size_t>(s.n * s.out), NAN);
        k(w, 0, groups, xq.data(), xq_row_bytes, info, s.n, y.data(), s.out);
        return y;
      };
      const bool q4 = dtype == LOOM_DTYPE_Q4_0;
      const std::vector<float> expected = run(q4 ? loom_gguf::avx2_q4_0_x8_kernel() : loom_gguf::avx2_q8_0_x8_kernel());
      EXPECT_TRUE(same_bits(run(q4 ? q4_0 : q8_0), expected))
          << (q4 ? "Q4_0" : "Q8_0") << " n " << s.n << " in " << s.in << " out " << s.out;
    }
  }
}

TEST(GgufVnni, Native) {
  if (!loom_gguf::cpu_has_avx512_vnni())
    GTEST_SKIP() << "this CPU has no AVX512-VNNI (+VL); the Emulated test covers the kernels";
  check_gguf(loom_gguf::vnni_q4_0_x8_kernel(), loom_gguf::vnni_q8_0_x8_kernel());
}

TEST(GgufVnni, Emulated) {
  if (!cpu_has_avx2()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C CPUs";
  check_gguf(loom_gguf::emulated::vnni_q4_0_x8_kernel(), loom_gguf::emulated::vnni_q8_0_x8_kernel());
}

}  // namespace
