// quantization/none's bf16 compute mode (none_bf16.hpp) at kernel level:
//   - pair panels hold exactly bf16(W) of f32, f16 and bf16 sources, zero past in and out;
//   - the AVX512-BF16 kernels (decode GEMM; shared prefill pack_x + packed_gemm) stay within the
//     rounding bound of the reference's sum over the same bf16 operands;
//   - every row gets the same bits whatever the row count, path (decode or prefill), panel split
//     or k blocking (batch invariance within the mode).
// "Native" runs where the CPU has AVX512-BF16 (skipped, saying so, elsewhere); "Emulated" runs the
// same source compiled against SIMDe on any AVX2 CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_bf16.hpp"

namespace {

using loom_none::kPanel;
using loom_none::PanelView;

struct Bf16Kernels {
  loom_none::PanelGemm gemm;
  loom_none::PackX pack_x;
  loom_none::PackedGemm packed_gemm;
};

// Random W [out, in] in f32 (values in [-1, 1], a few large and tiny ones) and its pair panels.
struct PairWeight {
  std::vector<float> w;
  std::vector<uint32_t> panels;
  PanelView view;
};

PairWeight random_pair_weight(int64_t out, int64_t in, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  PairWeight p;
  p.w.resize(static_cast<size_t>(out * in));
  for (auto& e : p.w) e = u(rng);
  p.w[0] = 300.0F;
  p.w[p.w.size() - 1] = 1e-3F;
  p.view = PanelView{LOOM_DTYPE_BF16, out, in, (out + kPanel - 1) / kPanel, nullptr};
  p.panels.assign(static_cast<size_t>(p.view.n_panels * loom_none::pairs_of(in) * kPanel), 0xdeadbeefU);
  loom_none::pack_pair_panels(p.w.data(), LOOM_DTYPE_F32, in, p.view, p.panels.data(), 0, p.view.n_panels);
  p.view.data = p.panels.data();
  return p;
}

std::vector<float> random_x(int64_t n, int64_t in, std::mt19937_64& rng) {
  std::uniform_real_distribution<float> u(-2.0F, 2.0F);
  std::vector<float> x(static_cast<size_t>(n * in));
  for (auto& e : x) e = u(rng);
  return x;
}

float rounded(float v) { return loom::sdk::bf16_to_f32(loom::sdk::f32_to_bf16(v)); }

// y [n, out] through the decode GEMM on panel ranges of `split` panels.
std::vector<float> decode(const Bf16Kernels& k, const PanelView& w, const std::vector<float>& x, int64_t n,
                          int64_t split) {
  std::vector<float> y(static_cast<size_t>(n * w.out), NAN);
  std::vector<float> scratch(static_cast<size_t>(loom_none::scratch_floats(n, w.in)));
  for (int64_t p = 0; p < w.n_panels; p += split)
    k.gemm(w, p, std::min(w.n_panels, p + split), x.data(), w.in, n, y.data(), w.out, scratch.data());
  return y;
}

// y [n, out] through the shared prefill: every x block packed, then (row block, `chunk` panels)
// items.
std::vector<float> prefill(const Bf16Kernels& k, const PanelView& w, const std::vector<float>& x, int64_t n,
                           int64_t chunk) {
  std::vector<float> xp(static_cast<size_t>(loom_none::packed_x_floats(n, w.in, w.dtype)));
  for (int64_t b = 0; b < loom_none::packed_x_blocks(n, w.in, w.dtype); ++b) k.pack_x(w, x.data(), w.in, n, b, xp.data());
  std::vector<float> y(static_cast<size_t>(n * w.out), NAN);
  for (int64_t m = 0; m * loom_none::kBlockRows < n; ++m)
    for (int64_t p = 0; p < w.n_panels; p += chunk)
      k.packed_gemm(w, p, std::min(w.n_panels, p + chunk), xp.data(), n, m, y.data(), w.out);
  return y;
}

// |got - reference| within recursive summation's bound over the same bf16 operands:
// (pairs x 2 + 1) * 2^-24 * sum |x_k w_k| (the products are exact; only the adds round, in
// whatever order the instruction takes them).
void expect_near_reference(const PanelView& w, const std::vector<float>& w_f32, const std::vector<float>& x,
                           int64_t n, const std::vector<float>& got, const char* what) {
  std::vector<float> ref(static_cast<size_t>(n * w.out), NAN);
  loom_none::pair_gemm_reference(w, 0, w.n_panels, x.data(), w.in, n, ref.data(), w.out);
  const double bound_per = static_cast<double>(2 * loom_none::pairs_of(w.in) + 1) * std::ldexp(1.0, -24);
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < w.out; ++o) {
      double mag = 0;
      for (int64_t k = 0; k < w.in; ++k)
        mag += std::fabs(static_cast<double>(rounded(x[static_cast<size_t>(t * w.in + k)])) *
                         rounded(w_f32[static_cast<size_t>(o * w.in + k)]));
      const size_t i = static_cast<size_t>(t * w.out + o);
      ASSERT_LE(std::fabs(static_cast<double>(got[i]) - ref[i]), bound_per * mag + 1e-30)
          << what << ": row " << t << " feature " << o << " of [" << w.out << ", " << w.in << "], n = " << n;
    }
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

void check_kernels(const Bf16Kernels& k) {
  std::mt19937_64 rng(41);
  // in: odd (a half-empty last pair), below one k block, and 1100 (three 512-k blocks, the last
  // partial); out: a partial last panel.
  // 200 features: 12 whole panels, so a short group's 4-8 panel tiles run.
  for (const auto& [out, in] : {std::pair<int64_t, int64_t>{37, 91}, {70, 1100}, {16, 2}, {5, 1}, {200, 130}}) {
    const PairWeight pw = random_pair_weight(out, in, rng);
    const std::vector<float> x = random_x(150, in, rng);
    // Each row alone through the decode kernel: the bits every other way must give.
    std::vector<float> alone(static_cast<size_t>(150 * out));
    for (int64_t t = 0; t < 150; ++t) {
      const std::vector<float> xt(x.begin() + t * in, x.begin() + (t + 1) * in);
      const std::vector<float> yt = decode(k, pw.view, xt, 1, pw.view.n_panels);
      std::copy(yt.begin(), yt.end(), alone.begin() + t * out);
    }
    expect_near_reference(pw.view, pw.w, x, 150, alone, "decode, one row at a time");
    for (const int64_t n : {int64_t{2}, int64_t{5}, int64_t{8}, int64_t{9}, int64_t{13}, int64_t{16}, int64_t{17},
                            int64_t{24}, int64_t{31}, int64_t{150}}) {
      const std::vector<float> want(alone.begin(), alone.begin() + n * out);
      EXPECT_TRUE(same_bits(decode(k, pw.view, x, n, pw.view.n_panels), want)) << "decode, n = " << n << ", in " << in;
      EXPECT_TRUE(same_bits(decode(k, pw.view, x, n, 1), want)) << "decode one panel at a time, n = " << n;
      for (const int64_t chunk : {int64_t{3}, int64_t{9}})
        EXPECT_TRUE(same_bits(prefill(k, pw.view, x, n, chunk), want))
            << "shared prefill in chunks of " << chunk << " panels, n = " << n << ", in " << in;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
TEST(NoneBf16Kernels, Native) {
  if (!loom_none::cpu_has_avx512_bf16()) GTEST_SKIP() << "this CPU has no AVX512-BF16; the Emulated test covers the kernels";
  check_kernels({loom_none::pair_gemm_avx512bf16, loom_none::pack_x_pairs_avx512bf16,
                 loom_none::packed_pair_gemm_avx512bf16});
}

TEST(NoneBf16Kernels, Emulated) {
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c")))
    GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C";
  check_kernels({loom_none::emulated::pair_gemm_avx512bf16, loom_none::emulated::pack_x_pairs_avx512bf16,
                 loom_none::emulated::packed_pair_gemm_avx512bf16});
}
#endif

TEST(NoneBf16Panels, HoldTheRoundedWeightsOfEverySourceType) {
  // [3, 5]: one partial panel, an odd in (the last pair's high half is zero).
  const std::vector<float> w = {1.0F,  -2.5F, 3.14159F, 1e-3F, 65504.0F, 0.1F,   0.2F,  -0.3F,
                                7.77F, 1e6F,  -1e-6F,   2.0F,  0.333F,   -8.0F, 0.0F};
  std::vector<uint16_t> h(w.size()), b(w.size());
  for (size_t i = 0; i < w.size(); ++i) {
    h[i] = loom::sdk::f32_to_f16(w[i]);
    b[i] = loom::sdk::f32_to_bf16(w[i]);
  }
  for (const auto& [dtype, src] : {std::pair<loom_dtype, const void*>{LOOM_DTYPE_F32, w.data()},
                                   {LOOM_DTYPE_F16, h.data()}, {LOOM_DTYPE_BF16, b.data()}}) {
    PanelView v{LOOM_DTYPE_BF16, 3, 5, 1, nullptr};
    std::vector<uint32_t> panels(static_cast<size_t>(3 * kPanel), 0xdeadbeefU);
    loom_none::pack_pair_panels(src, dtype, 5, v, panels.data(), 0, 1);
    for (int64_t kp = 0; kp < 3; ++kp)
      for (int64_t j = 0; j < kPanel; ++j) {
        uint32_t want = 0;
        for (int64_t half = 0; half < 2; ++half) {
          const int64_t k = 2 * kp + half;
          if (j >= 3 || k >= 5) continue;
          const size_t i = static_cast<size_t>(j * 5 + k);
          const float v_src = dtype == LOOM_DTYPE_F32   ? w[i]
                              : dtype == LOOM_DTYPE_F16 ? loom::sdk::f16_to_f32(h[i])
                                                        : loom::sdk::bf16_to_f32(b[i]);
          want |= static_cast<uint32_t>(loom::sdk::f32_to_bf16(v_src)) << (16 * half);
        }
        EXPECT_EQ(panels[static_cast<size_t>(kp * kPanel + j)], want) << "pair " << kp << ", lane " << j;
      }
  }
}

}  // namespace
