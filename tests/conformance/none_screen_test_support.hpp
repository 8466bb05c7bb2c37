// What the tests of linear_top_k's screens share (conformance_none_top_k.cpp, the bf16 screen;
// conformance_none_int8_screen.cpp, the int8 one): heads packed in the exact path's panels,
// linear's value, and the check of the scans (the k-th largest lower end, and the candidates whose
// upper end reaches it) against screen_interval applied to each output in turn, which every
// implementation of the two passes (AVX-512, its SIMDe emulation, portable).
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_head_screen.hpp"
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

}  // namespace loom_none_test
