// quantization/none's linear_top_k at kernel level (none_head_screen.hpp, none_head_top_k.hpp):
//   - the screen kernel, for f32/f16/bf16 panels, odd and even in, out not a multiple of 16,
//     n = 1..20 and split panel ranges: within the summation bound of a double reference on the
//     same bf16 operands (the pairing and the layout), padding lanes exactly 0, and every output
//     inside screen_interval of linear's value (the exact FMA chain), including a crafted row
//     whose rounding errors all add up and which comes within 10% of the bound;
//   - the scans: threshold and candidates exactly those of screen_interval applied one by one,
//     NaN for a non-finite screen, -1 past the candidate limit;
//   - the bound's helpers: bf16 pairs, refusals, norms rounded up by at most 2^-19;
//   - HeadTopK::screened, with the bf16 screen and with the int8 one (none_head_int8.hpp; its
//     kernels in conformance_none_int8_screen.cpp): select_top_k over the exact kernel's rows, bit
//     for bit, with random rows settled by the screen alone and all-equal or NaN rows sent to linear.
// "Native" runs where the CPU has AVX512-BF16 (skipped, saying so, elsewhere); "Emulated" runs the
// kernel and scans compiled against SIMDe on any AVX2 CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "loom/sdk_half.hpp"
#include "loom/sdk_top_k.hpp"
#include "none_bf16.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"
#include "none_head_top_k.hpp"
#include "none_screen_test_support.hpp"

namespace {

using loom_none_test::exact_dot;
using loom_none_test::Head;
using loom_none_test::make_head;
using loom_none_test::name_of;

using loom_none::kPanel;
using loom_none::PanelView;
using loom_none::RowBound;

using Screen = void (*)(const PanelView&, int64_t, int64_t, const uint32_t*, int64_t, float*, int64_t);

float rounded(float v) { return loom::sdk::bf16_to_f32(loom::sdk::f32_to_bf16(v)); }

// x [n, in] random, except row 0 when `coherent`: every element 1 + 2^-8 - 2^-20, which bf16 rounds
// down to 1 (as it does the crafted weight row 0), so all rounding errors have one sign.
constexpr float kCoherent = 1.0F + 0x1p-8F - 0x1p-20F;

void check_screen(Screen screen) {
  std::mt19937_64 rng(17);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  for (const auto& [out, in] :
       {std::pair<int64_t, int64_t>{37, 91}, {70, 130}, {33, 257}, {16, 1}, {5, 2}, {200, 64}}) {
    std::vector<float> src(static_cast<size_t>(out * in));
    for (auto& e : src) e = u(rng);
    std::fill(src.begin(), src.begin() + in, kCoherent);
    std::vector<float> x(static_cast<size_t>(20 * in));
    for (auto& e : x) e = 2.0F * u(rng);
    std::fill(x.begin(), x.begin() + in, kCoherent);
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const Head h = make_head(src, dtype, out, in);
      const int64_t ss = h.view.n_panels * kPanel, kpn = loom_none::pairs_of(in);
      std::vector<float> norms(static_cast<size_t>(ss));
      loom_none::head_norms(h.view, 0, h.view.n_panels, norms.data());
      const float max_norm = *std::max_element(norms.begin(), norms.end());
      std::vector<uint32_t> xp(static_cast<size_t>(20 * kpn));
      std::vector<RowBound> bounds(20);
      for (int64_t t = 0; t < 20; ++t)
        ASSERT_TRUE(
            loom_none::pack_screen_row(x.data() + t * in, in, dtype, max_norm, xp.data() + t * kpn, &bounds[t]));
      for (int64_t n = 1; n <= 20; ++n) {
        const std::string at = std::string(name_of(dtype)) + " [" + std::to_string(out) + ", " + std::to_string(in) +
                               "], n = " + std::to_string(n);
        std::vector<float> s(static_cast<size_t>(n * ss), NAN);
        const int64_t split = n % 2 == 0 ? 1 : h.view.n_panels;  // even n: the panels split after the first
        screen(h.view, 0, split, xp.data(), n, s.data(), ss);
        screen(h.view, split, h.view.n_panels, xp.data(), n, s.data(), ss);
        for (int64_t t = 0; t < n; ++t) {
          const float* xt = x.data() + t * in;
          for (int64_t o = out; o < ss; ++o) ASSERT_EQ(s[static_cast<size_t>(t * ss + o)], 0.0F) << at << " padding";
          for (int64_t o = 0; o < out; ++o) {
            const float* wo = h.w.data() + o * in;
            double dot = 0, mag = 0;
            for (int64_t k = 0; k < in; ++k) {
              const double p = static_cast<double>(rounded(xt[k])) * rounded(wo[k]);
              dot += p;
              mag += std::fabs(p);
            }
            const float got = s[static_cast<size_t>(t * ss + o)];
            ASSERT_LE(std::fabs(got - dot), 2.02 * static_cast<double>(in + 2) * 0x1p-24 * mag + 1e-30)
                << at << ": row " << t << " feature " << o << " off the bf16 dot product";
            float lo = 0, up = 0;
            loom_none::screen_interval(got, norms[static_cast<size_t>(o)], bounds[t], &lo, &up);
            const float y = exact_dot(xt, wo, in);
            ASSERT_LE(lo, y) << at << ": row " << t << " feature " << o;
            ASSERT_GE(up, y) << at << ": row " << t << " feature " << o;
            if (t == 0 && o == 0 && dtype != LOOM_DTYPE_BF16 && in >= 16) {  // the crafted pair: nearly the bound
              EXPECT_GE(std::fabs(y - got), 0.9 * (up - got)) << at << ": the coherent row's error";
            }
          }
        }
      }
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
TEST(NoneHeadScreen, Native) {
  if (!loom_none::cpu_has_avx512_bf16())
    GTEST_SKIP() << "this CPU has no AVX512-BF16; the Emulated test covers the kernels";
  check_screen(loom_none::head_screen_avx512bf16);
  loom_none_test::check_scans(loom_none::screen_threshold_avx512, loom_none::screen_candidates_avx512);
}

TEST(NoneHeadScreen, Emulated) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")))
    GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C";
  check_screen(loom_none::emulated::head_screen_avx512bf16);
  loom_none_test::check_scans(loom_none::emulated::screen_threshold_avx512, loom_none::emulated::screen_candidates_avx512);
}
#endif

TEST(NoneHeadBound, PacksBf16PairsAndRefusesWhatItCannotBound) {
  const std::vector<float> x = {1.0F, 3.14159F, -2e-3F, 65504.0F, 0.1F};
  std::vector<uint32_t> xp(3, 0xdeadbeefU);
  RowBound b{};
  ASSERT_TRUE(loom_none::pack_screen_row(x.data(), 5, LOOM_DTYPE_F16, 1.0F, xp.data(), &b));
  EXPECT_EQ(xp, (std::vector<uint32_t>{loom_none::bf16_pair(x[0], x[1]), loom_none::bf16_pair(x[2], x[3]),
                                       loom_none::bf16_pair(x[4], 0.0F)}));
  EXPECT_GT(b.c, 0.0F);
  EXPECT_GT(b.a, 0.0F);
  for (const float bad : {NAN, INFINITY}) {
    std::vector<float> xb = x;
    xb[2] = bad;
    EXPECT_FALSE(loom_none::pack_screen_row(xb.data(), 5, LOOM_DTYPE_F16, 1.0F, xp.data(), &b)) << bad;
  }
  const std::vector<float> big(4, 1e20F);  // ||x|| N = 2e40 > 2^126: a chain could overflow
  EXPECT_FALSE(loom_none::pack_screen_row(big.data(), 4, LOOM_DTYPE_F32, 1e20F, xp.data(), &b));
  EXPECT_TRUE(loom_none::pack_screen_row(big.data(), 4, LOOM_DTYPE_F32, 1e15F, xp.data(), &b));
  EXPECT_FALSE(loom_none::pack_screen_row(x.data(), 5, LOOM_DTYPE_F32, NAN, xp.data(), &b));
  const std::vector<float> wide((1 << 16) + 1, 0.5F);
  std::vector<uint32_t> wide_xp(wide.size() / 2 + 1);
  EXPECT_FALSE(loom_none::pack_screen_row(wide.data(), (1 << 16) + 1, LOOM_DTYPE_F32, 1.0F, wide_xp.data(), &b));
}

TEST(NoneHeadBound, NormsAreRoundedUpByLittle) {
  std::mt19937_64 rng(3);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  const int64_t out = 21, in = 77;
  std::vector<float> src(static_cast<size_t>(out * in));
  for (auto& e : src) e = u(rng);
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
    const Head h = make_head(src, dtype, out, in);
    std::vector<float> norms(static_cast<size_t>(2 * kPanel), NAN);
    loom_none::head_norms(h.view, 0, 2, norms.data());
    for (int64_t o = 0; o < 2 * kPanel; ++o) {
      double sq = 0;
      for (int64_t k = 0; o < out && k < in; ++k) sq += static_cast<double>(h.w[o * in + k]) * h.w[o * in + k];
      const double want = std::sqrt(sq);
      EXPECT_GE(norms[o], want) << name_of(dtype) << " row " << o;
      EXPECT_LE(norms[o], want * (1 + 0x1p-19)) << name_of(dtype) << " row " << o;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// HeadTopK::screened on heads in the exact path's panels (none_screen_test_support.hpp).
void check_screened(loom_none::Screening how, bool int8, loom_none::PanelGemm exact) {
  loom_none_test::check_screened(how, int8, exact, [](const std::vector<float>& src, loom_dtype dtype, int64_t out,
                                                      int64_t in) {
    auto h = std::make_shared<Head>(make_head(src, dtype, out, in));
    return loom_none_test::HeadUnderTest{h->view, h};
  });
}

TEST(NoneHeadTopK, ScreenedSettlesRowsAndHandsTheRestToLinear) {
  if (!loom_none::cpu_has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16: the bf16 screen does not run";
  check_screened(loom_none::Screening{nullptr, nullptr, loom_none::Scans::kAvx512}, false, loom_none::panel_gemm_avx512);
}

// The int8 screen as an AVX2-only CPU runs it (AVX2 kernel and scans), with the portable kernel
// and scans, and with the VNNI kernel and AVX-512 scans where the CPU has them.
TEST(NoneHeadTopK, Int8ScreenedSettlesRowsAndHandsTheRestToLinear) {
  if (!loom_none::cpu_has_avx2_fma_f16c()) GTEST_SKIP() << "the int8 screen needs AVX2+FMA+F16C";
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_avx2, loom_none::Scans::kAvx2}, true,
                 loom_none::panel_gemm_avx2);
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_portable, loom_none::Scans::kPortable},
                 true, loom_none::panel_gemm_avx2);
  if (!loom_none::cpu_has_avx512_vnni()) GTEST_SKIP() << "this CPU has no AVX512-VNNI: its kernel was not run";
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_vnni, loom_none::Scans::kAvx512}, true,
                 loom_none::panel_gemm_avx512);
}
#endif

}  // namespace
