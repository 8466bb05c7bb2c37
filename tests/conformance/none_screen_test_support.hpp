// What the tests of linear_top_k's screens share (conformance_none_top_k.cpp, the bf16 screen;
// conformance_none_int8_screen.cpp, the int8 one; conformance_none_int8_pairs.cpp, the int8 one
// under compute = "bf16"): heads packed in the exact path's panels, linear's value, the check of
// HeadTopK::screened against select_top_k over linear's rows, and the check of the scans (the k-th largest lower end, and the candidates whose
// upper end reaches it) against screen_interval applied to each output in turn, which every
// implementation of the two passes (AVX-512, its SIMDe emulation, portable).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "loom/sdk_half.hpp"
#include "loom/sdk_top_k.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"
#include "none_head_top_k.hpp"
#include "none_panel.hpp"

namespace loom_none_test {

using loom_none::kPanel;
using loom_none::PanelView;

inline const char* name_of(loom_dtype t) { return t == LOOM_DTYPE_F32 ? "f32" : t == LOOM_DTYPE_F16 ? "f16" : "bf16"; }

// W [out, in] stored as `dtype` (its values as floats in `w`) and packed in exact-path panels.
struct Head {
  std::vector<float> w;
  std::vector<char> panels;
  PanelView view;
};

inline Head make_head(const std::vector<float>& src, loom_dtype dtype, int64_t out, int64_t in) {
  Head h;
  h.w.resize(src.size());
  std::vector<uint16_t> bits(src.size());
  for (size_t i = 0; i < src.size(); ++i) {
    if (dtype == LOOM_DTYPE_F32) {
      h.w[i] = src[i];
    } else {
      bits[i] = dtype == LOOM_DTYPE_F16 ? loom::sdk::f32_to_f16(src[i]) : loom::sdk::f32_to_bf16(src[i]);
      h.w[i] = dtype == LOOM_DTYPE_F16 ? loom::sdk::f16_to_f32(bits[i]) : loom::sdk::bf16_to_f32(bits[i]);
    }
  }
  h.view = PanelView{dtype, out, in, (out + kPanel - 1) / kPanel, nullptr};
  h.panels.assign(static_cast<size_t>(loom_none::panel_bytes(h.view) * h.view.n_panels), 0x5a);
  const void* data = dtype == LOOM_DTYPE_F32 ? static_cast<const void*>(src.data()) : bits.data();
  loom_none::pack_panels(data, in, h.view, h.panels.data(), 0, h.view.n_panels);
  h.view.data = h.panels.data();
  return h;
}

// linear's value: one fused multiply-add chain in increasing k from 0.
inline float exact_dot(const float* x, const float* w, int64_t in) {
  float acc = 0.0F;
  for (int64_t k = 0; k < in; ++k) acc = std::fma(x[k], w[k], acc);
  return acc;
}

using Threshold = float (*)(const float*, const float*, int64_t, const loom_none::RowBound&, int32_t, float*);
using Candidates = int64_t (*)(const float*, const float*, int64_t, const loom_none::RowBound&, float, int32_t*,
                               int64_t);

// Threshold and candidates against screen_interval applied to each output in turn.
inline void check_scans(Threshold threshold, Candidates candidates) {
  std::mt19937_64 rng(23);
  std::uniform_real_distribution<float> u(-10.0F, 10.0F);
  for (const int64_t out : {int64_t{37}, int64_t{1000}, int64_t{16}}) {
    const int64_t padded = (out + 15) / 16 * 16;
    std::vector<float> s(static_cast<size_t>(padded), 0.0F), norms(static_cast<size_t>(padded), 0.0F);
    for (int64_t o = 0; o < out; ++o) {
      s[o] = o % 7 == 3 ? s[o - 1] : u(rng);  // some exact ties
      norms[o] = std::fabs(u(rng)) / 5;
    }
    const loom_none::RowBound b{0.02F, 1e-30F};
    std::vector<float> lo(static_cast<size_t>(out)), up(static_cast<size_t>(out));
    for (int64_t o = 0; o < out; ++o) loom_none::screen_interval(s[o], norms[o], b, &lo[o], &up[o]);
    std::vector<float> sorted = lo;
    std::sort(sorted.begin(), sorted.end(), std::greater<>());
    for (const int32_t k : {1, 3, 7, 16}) {
      if (k > out) continue;
      std::vector<float> run(static_cast<size_t>(k));
      const float t = threshold(s.data(), norms.data(), out, b, k, run.data());
      EXPECT_EQ(t, sorted[k - 1]) << "out " << out << ", k " << k;
      std::vector<int32_t> want;
      for (int64_t o = 0; o < out; ++o)
        if (up[o] >= t) want.push_back(static_cast<int32_t>(o));
      std::vector<int32_t> got(want.size() + 1, -7);
      ASSERT_EQ(candidates(s.data(), norms.data(), out, b, t, got.data(), static_cast<int64_t>(want.size())),
                static_cast<int64_t>(want.size()));
      got.pop_back();
      EXPECT_EQ(got, want) << "out " << out << ", k " << k;
      EXPECT_EQ(candidates(s.data(), norms.data(), out, b, t, got.data(), static_cast<int64_t>(want.size()) - 1), -1);
    }
    for (const float bad : {INFINITY, -INFINITY, NAN}) {
      std::vector<float> sb = s, run(1);
      sb[static_cast<size_t>(out - 1)] = bad;
      EXPECT_TRUE(std::isnan(threshold(sb.data(), norms.data(), out, b, 1, run.data()))) << bad;
    }
  }
}

#if defined(__x86_64__) && defined(__GNUC__)
// A head as a screen reads it: its panels (exact or pair panels: how.pairs) and their storage.
struct HeadUnderTest {
  PanelView view;
  std::shared_ptr<const void> storage;  // what view.data points into
};
using HeadMaker = std::function<HeadUnderTest(const std::vector<float>& src, loom_dtype dtype, int64_t out, int64_t in)>;

// HeadTopK::screened on its own: select_top_k over `exact`'s rows (linear's kernel for the
// head's panels), bit for bit, and which rows it had to hand to linear (counted through the
// LinearRows it is given): only the NaN row, or every row when the head's rows are all equal.
// With `int8`, the head's int8 copy (from the panels how.pairs says) is filled into how.
inline void check_screened(loom_none::Screening how, bool int8, loom_none::PanelGemm exact, const HeadMaker& make) {
  std::mt19937_64 rng(31);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  const int64_t out = 3001, in = 130, n = 70;  // two chunks of rows
  const loom::sdk::Host host(nullptr);       // parallel_for runs inline, one thread
  for (const bool all_equal : {false, true}) {
    std::vector<float> src(static_cast<size_t>(out * in)), x(static_cast<size_t>(n * in));
    for (auto& e : src) e = u(rng);
    for (auto& e : x) e = u(rng);
    if (all_equal)
      for (int64_t o = 1; o < out; ++o) std::copy_n(src.begin(), in, src.begin() + o * in);
    x[67 * in + 5] = NAN;  // row 67, in the second chunk: a NaN screen
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const HeadUnderTest h = make(src, dtype, out, in);
      const loom_none::HeadNorms norms = loom_none::HeadTopK::norms_of(host, h.view, how.pairs);
      loom_none::Int8Head copy;
      if (int8) {
        loom_none::int8_head_shape(h.view, &copy);
        copy.rho = static_cast<float>(loom_none::int8_head_panels(h.view, 0, h.view.n_panels, &copy, how.pairs));
        how.int8 = &copy;
      }
      int64_t by_linear = 0;
      const loom_none::LinearRows linear = [&](const float* xr, int64_t xs, int64_t m, float* y) {
        by_linear += m;
        std::vector<float> scratch(static_cast<size_t>(loom_none::scratch_floats(m, in)));
        exact(h.view, 0, h.view.n_panels, xr, xs, m, y, out, scratch.data());
      };
      std::vector<float> y(static_cast<size_t>(n * out));
      linear(x.data(), in, n, y.data());
      by_linear = 0;
      for (const int32_t k : {1, 5, 40}) {
        loom_none::HeadTopK top(1);
        std::vector<int32_t> ids(static_cast<size_t>(n * k), -1), want_ids(ids.size());
        std::vector<float> values(ids.size(), -1.0F), want_values(ids.size());
        top.screened(host, exact, h.view, norms, how, x.data(), in, n, k, ids.data(), values.data(), linear);
        for (int64_t t = 0; t < n; ++t)
          loom::sdk::select_top_k(y.data() + t * out, out, k, want_ids.data() + t * k, want_values.data() + t * k);
        const std::string at = std::string(name_of(dtype)) + " k " + std::to_string(k) +
                               (all_equal ? ", all rows equal" : "") + (int8 ? ", int8" : ", bf16") +
                               (how.pairs ? ", pair panels" : "");
        EXPECT_EQ(ids, want_ids) << at;
        EXPECT_EQ(std::memcmp(values.data(), want_values.data(), values.size() * sizeof(float)), 0) << at;
        EXPECT_EQ(by_linear, all_equal ? n : 1) << at << ": rows computed by linear";
        by_linear = 0;
      }
    }
  }
}
#endif

}  // namespace loom_none_test
