// The int8 screen under compute = "bf16" (none_head_int8.hpp, HeadChain::kPairs): the copy made
// from the pair panels' bf16 weights, rows rounded to bf16 before they are quantized, and the
// bound held against the pair kernels' vdpbf16ps chain instead of the exact FMA chain.
//   - every output's interval holds the pair kernel's value (natively where the CPU has
//     AVX512-BF16, through SIMDe elsewhere) and the plain reference's, for f32/f16/bf16 sources,
//     odd in, out not a multiple of 16, rows with subnormal and mixed-scale elements; and the
//     bound stays useful (few outputs reach the best one's lower end);
//   - the pair panels' norms and int8 copy are those of the bf16 weights they hold;
//   - HeadTopK::screened with Screening::pairs: select_top_k over the pair kernel's rows, bit for
//     bit, with only the NaN row (or, when the head's rows are all equal, every row) sent to linear.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_bf16.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"
#include "none_head_top_k.hpp"
#include "none_screen_test_support.hpp"

namespace {

#if defined(__x86_64__) && defined(__GNUC__)

using loom_none::kPanel;
using loom_none::PanelView;
using loom_none::RowBound;
using loom_none_test::name_of;

float bf16_of(float v) { return loom::sdk::bf16_to_f32(loom::sdk::f32_to_bf16(v)); }

// bf16 (and f16, then bf16) rounds it down to 1: a row of it times a weight row of it is in in
// bf16 products, in (1 + 2^-8)^2 in exact ones, and exact in int8 (one value per block).
constexpr float kCoherent = 1.0F + 0x1p-8F - 0x1p-20F;

// W [out, in] from src stored as `dtype`, then packed in pair panels (rounded to bf16).
struct PairHead {
  std::vector<float> w;  // the bf16 weights the pair panels hold
  std::vector<uint32_t> pairs;
  PanelView view;
};

PairHead make_pair_head(const std::vector<float>& src, loom_dtype dtype, int64_t out, int64_t in) {
  PairHead h;
  std::vector<uint16_t> bits(src.size());
  std::vector<float> stored(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (dtype == LOOM_DTYPE_F32) {
      stored[i] = src[i];
    } else {
      bits[i] = dtype == LOOM_DTYPE_F16 ? loom::sdk::f32_to_f16(src[i]) : loom::sdk::f32_to_bf16(src[i]);
      stored[i] = dtype == LOOM_DTYPE_F16 ? loom::sdk::f16_to_f32(bits[i]) : loom::sdk::bf16_to_f32(bits[i]);
    }
  }
  h.w.resize(src.size());
  for (size_t i = 0; i < src.size(); ++i) h.w[i] = bf16_of(stored[i]);
  h.view = PanelView{LOOM_DTYPE_BF16, out, in, (out + kPanel - 1) / kPanel, nullptr};
  h.pairs.assign(static_cast<size_t>(loom_none::pairs_of(in) * kPanel * h.view.n_panels), 0x5a5a5a5a);
  const void* data = dtype == LOOM_DTYPE_F32 ? static_cast<const void*>(src.data()) : bits.data();
  loom_none::pack_pair_panels(data, dtype, in, h.view, h.pairs.data(), 0, h.view.n_panels);
  h.view.data = h.pairs.data();
  return h;
}

// The pair kernel linear runs under compute = "bf16" on this CPU, or its SIMDe emulation.
loom_none::PanelGemm pair_kernel() {
  return loom_none::cpu_has_avx512_bf16() ? loom_none::pair_gemm_avx512bf16
                                          : loom_none::emulated::pair_gemm_avx512bf16;
}

std::vector<float> pair_rows(const PairHead& h, const float* x, int64_t n, loom_none::PanelGemm gemm) {
  std::vector<float> y(static_cast<size_t>(n * h.view.out));
  std::vector<float> scratch(static_cast<size_t>(loom_none::scratch_floats(n, h.view.in)));
  gemm(h.view, 0, h.view.n_panels, x, h.view.in, n, y.data(), h.view.out, scratch.data());
  return y;
}

bool runs_here() { return loom_none::cpu_has_avx2_fma_f16c(); }

TEST(NoneInt8PairScreen, NormsAndCopyAreThoseOfTheBf16Weights) {
  if (!runs_here()) GTEST_SKIP() << "the pair kernels' emulation is built for AVX2+FMA+F16C";
  std::mt19937_64 rng(5);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  const int64_t out = 37, in = 91;
  std::vector<float> src(static_cast<size_t>(out * in));
  for (auto& e : src) e = u(rng);
  const PairHead h = make_pair_head(src, LOOM_DTYPE_F32, out, in);
  std::vector<float> norms(static_cast<size_t>(h.view.n_panels * kPanel), -1.0F);
  loom_none::head_norms(h.view, 0, h.view.n_panels, norms.data(), /*pairs=*/true);
  loom_none::Int8Head copy;
  loom_none::int8_head_shape(h.view, &copy);
  const double rho = loom_none::int8_head_panels(h.view, 0, h.view.n_panels, &copy, /*pairs=*/true);
  double worst = 0;
  for (int64_t o = 0; o < out; ++o) {
    const float* w = h.w.data() + o * in;
    float amax = 0;
    double sq = 0;
    for (int64_t k = 0; k < in; ++k) amax = std::max(amax, std::fabs(w[k])), sq += static_cast<double>(w[k]) * w[k];
    EXPECT_GE(norms[o], std::sqrt(sq)) << "row " << o;
    EXPECT_LE(norms[o], std::sqrt(sq) * (1 + 0x1p-19)) << "row " << o;
    const float d = amax / 127.0F;
    EXPECT_EQ(copy.scale[o], d) << "row " << o;
    double rr = 0;
    const int64_t p = o / kPanel, j = o % kPanel, k4s = copy.in_pad / 4;
    for (int64_t k = 0; k < in; ++k) {
      const int32_t q = copy.q[static_cast<size_t>(((p * k4s + k / 4) * kPanel + j) * 4 + k % 4)] - 128;
      ASSERT_EQ(q, static_cast<int32_t>(std::nearbyint(w[k] / d))) << "row " << o << " k " << k;
      rr += (w[k] - static_cast<double>(d) * q) * (w[k] - static_cast<double>(d) * q);
    }
    worst = std::max(worst, std::sqrt(rr / sq));
  }
  EXPECT_GE(rho, worst);
  EXPECT_LE(rho, worst * (1 + 0x1p-18));
  for (int64_t o = out; o < h.view.n_panels * kPanel; ++o) EXPECT_EQ(norms[o], 0.0F) << "padding " << o;
}

TEST(NoneInt8PairScreen, EveryIntervalHoldsThePairKernelsValue) {
  if (!runs_here()) GTEST_SKIP() << "the pair kernels' emulation is built for AVX2+FMA+F16C";
  std::mt19937_64 rng(41);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  constexpr int64_t kRows = 6;
  for (const auto& [out, in] : {std::pair<int64_t, int64_t>{37, 91}, {300, 130}, {33, 257}, {16, 1}, {2000, 64}}) {
    std::vector<float> src(static_cast<size_t>(out * in));
    for (auto& e : src) e = u(rng);
    std::fill(src.begin(), src.begin() + in, kCoherent);  // output 0 against row 3: bf16 is off by in 2^-8
    std::vector<float> x(static_cast<size_t>(kRows * in));
    for (int64_t t = 0; t < kRows; ++t)
      for (int64_t k = 0; k < in; ++k) {
        float v = 3.0F * u(rng);
        if (t == 1 && k % 3 == 0) v *= 0x1p-140F;  // subnormal as f32 and as bf16: read as zero
        if (t == 2) v *= k % 2 == 0 ? 1000.0F : 0.001F;  // mixed scales within each block
        if (t == 3) v = kCoherent;
        x[static_cast<size_t>(t * in + k)] = v;
      }
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const PairHead h = make_pair_head(src, dtype, out, in);
      const std::string at = std::string(name_of(dtype)) + " [" + std::to_string(out) + ", " + std::to_string(in) + "]";
      const int64_t ss = h.view.n_panels * kPanel;
      std::vector<float> norms(static_cast<size_t>(ss));
      loom_none::head_norms(h.view, 0, h.view.n_panels, norms.data(), true);
      const float max_norm = *std::max_element(norms.begin(), norms.end());
      loom_none::Int8Head copy;
      loom_none::int8_head_shape(h.view, &copy);
      copy.rho = static_cast<float>(loom_none::int8_head_panels(h.view, 0, h.view.n_panels, &copy, true));
      const int64_t nb = copy.in_pad / loom_none::kInt8Block;
      std::vector<int8_t> q(static_cast<size_t>(kRows * copy.in_pad));
      std::vector<float> e(static_cast<size_t>(kRows * nb));
      std::vector<int32_t> sum(static_cast<size_t>(kRows * nb));
      std::vector<RowBound> bounds(kRows);
      for (int64_t t = 0; t < kRows; ++t)
        ASSERT_TRUE(loom_none::pack_int8_row(x.data() + t * in, in, copy.in_pad, copy.rho, max_norm,
                                             q.data() + t * copy.in_pad, e.data() + t * nb, sum.data() + t * nb,
                                             &bounds[t], loom_none::HeadChain::kPairs))
            << at << " row " << t;
      std::vector<float> s(static_cast<size_t>(kRows * ss));
      loom_none::head_screen_int8_portable(copy, 0, copy.n_panels, q.data(), e.data(), sum.data(), kRows, s.data(),
                                           ss);
      const std::vector<float> y = pair_rows(h, x.data(), kRows, pair_kernel());
      std::vector<float> ref(static_cast<size_t>(kRows * out));
      loom_none::pair_gemm_reference(h.view, 0, h.view.n_panels, x.data(), in, kRows, ref.data(), out);
      for (int64_t t = 0; t < kRows; ++t) {
        float best_lo = -INFINITY;
        std::vector<float> lo(static_cast<size_t>(out)), up(static_cast<size_t>(out));
        for (int64_t o = 0; o < out; ++o) {
          loom_none::screen_interval(s[t * ss + o], norms[o], bounds[t], &lo[o], &up[o]);
          best_lo = std::max(best_lo, lo[o]);
          for (const float v : {y[t * out + o], ref[t * out + o]}) {
            ASSERT_LE(lo[o], v) << at << ": row " << t << " output " << o;
            ASSERT_GE(up[o], v) << at << ": row " << t << " output " << o;
          }
        }
        if (out >= 300 && t != 3) {  // a useful bound: few outputs can still reach the best one
          const auto reach = std::count_if(up.begin(), up.end(), [&](float v) { return v >= best_lo; });
          EXPECT_LE(reach, out / 20) << at << ": row " << t;
        }
      }
    }
  }
}

// HeadTopK::screened on pair panels, the pair kernel of this CPU as linear
// (none_screen_test_support.hpp).
void check_screened(loom_none::Screening how) {
  how.pairs = true;
  loom_none_test::check_screened(how, true, pair_kernel(), [](const std::vector<float>& src, loom_dtype dtype,
                                                               int64_t out, int64_t in) {
    auto h = std::make_shared<PairHead>(make_pair_head(src, dtype, out, in));
    return loom_none_test::HeadUnderTest{h->view, h};
  });
}

TEST(NoneInt8PairScreen, ScreenedSelectionIsThePairKernelsBitForBit) {
  if (!runs_here()) GTEST_SKIP() << "the pair kernels' emulation is built for AVX2+FMA+F16C";
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_avx2, loom_none::Scans::kAvx2});
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_portable, loom_none::Scans::kPortable});
  if (!loom_none::cpu_has_avx512_vnni()) GTEST_SKIP() << "this CPU has no AVX512-VNNI: its kernel was not run";
  check_screened(loom_none::Screening{nullptr, loom_none::head_screen_int8_vnni, loom_none::Scans::kAvx512});
}

#endif

}  // namespace
