// The screen of quantization/none's linear_top_k (interface 1.5, none_head_top_k.hpp): every
// output of a classifier head estimated with AVX512-BF16 on the exact path's own panels (no second
// copy of the weight), with a rigorous bound on its distance from linear's value, so that only
// the outputs the bound cannot rule out are computed exactly.
//
// Estimate: s[t][o] = sum over k pairs of vdpbf16ps(bf16(x[t][k]) w^[o][k] + ...), x rounded to
// bfloat16 per row (pack_screen_row), the panel's f16/f32 weights rounded by vcvtne2ps2bf16 as
// they are read (bf16 weights as stored).
// Bound (none_head_bound.cpp derives it): |y[t][o] - s[t][o]| <= c_t * N_o + a_t, N_o = ||W[o]||_2
// (head_norms, rounded up), c_t and a_t from the row's norms (pack_screen_row, rounded up);
// screen_interval widens it for the float arithmetic that applies it.
#pragma once

#include <cstdint>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_bf16.hpp"
#include "none_panel.hpp"

namespace loom_none {

// The bounds' rounding up (none_head_bound.cpp, none_head_int8.cpp): a norm or coefficient summed
// in double, scaled by 1 + 2^-20 (far more than the double sums' error), then rounded to float, is
// at least the real value.
constexpr double kBoundUp = 1.0 + 0x1p-20;
inline float round_up(double v) { return static_cast<float>(v * kBoundUp); }

// Element i of w's panels (f32, f16 or bf16), exactly.
inline double panel_element(const PanelView& w, int64_t i) {
  if (w.dtype == LOOM_DTYPE_F32) return static_cast<const float*>(w.data)[i];
  const uint16_t h = static_cast<const uint16_t*>(w.data)[i];
  return w.dtype == LOOM_DTYPE_BF16 ? loom::sdk::bf16_to_f32(h) : loom::sdk::f16_to_f32(h);
}

// Weight (16 p + j, k) exactly: from the exact path's panels, or (`pairs`) from compute bf16's
// pair panels (none_bf16.hpp: panel p's pair (k / 2, j) holds k even in its low half).
inline double weight_element(const PanelView& w, bool pairs, int64_t p, int64_t k, int64_t j) {
  if (!pairs) return panel_element(w, (p * w.in + k) * kPanel + j);
  const uint32_t v = static_cast<const uint32_t*>(w.data)[(p * pairs_of(w.in) + k / 2) * kPanel + j];
  return loom::sdk::bf16_to_f32(static_cast<uint16_t>(k % 2 != 0 ? v >> 16 : v));
}

// The bytes of one of w's panels: the exact path's, or (`pairs`) a pair panel's.
inline int64_t stored_panel_bytes(const PanelView& w, bool pairs) {
  return pairs ? pairs_of(w.in) * kPanel * 4 : panel_bytes(w);
}

// ||W[o]||_2 for every feature of a weight's panels, rounded up: n[16 p + j] (zero for the padding
// of the last panel), and the largest.
struct HeadNorms {
  std::vector<float> n;  // n_panels * kPanel
  float max = 0.0F;
};

// Writes norms[16 p + j] for the panels [p_begin, p_end) of w (the exact path's layout, or
// compute bf16's pair panels: `pairs`).
void head_norms(const PanelView& w, int64_t p_begin, int64_t p_end, float* norms, bool pairs = false);

// The bound of one row: |y_o - s_o| <= c * N_o + a.
struct RowBound {
  float c, a;
};

// Packs row x [in] as bf16 pairs xp[kp] = bf16(x[2 kp]) | bf16(x[2 kp + 1]) << 16 (zero past in;
// loom::sdk::f32_to_bf16's rounding) and writes its bound for weights of `w_dtype` whose largest
// row norm is max_norm. Returns false, with *b unset, when the bound does not hold or is useless:
// x not finite, or ||x|| * max_norm near the float range (a chain could overflow), or `in` beyond
// 2^16 (the bound's gamma assumes in * 2^-24 small).
bool pack_screen_row(const float* x, int64_t in, loom_dtype w_dtype, float max_norm, uint32_t* xp, RowBound* b);

// [lo, up] for one screened output: lo <= y <= up whenever |y - s| <= c * N + a holds in real
// arithmetic, though every step here rounds (e is inflated by 2^-10 of itself and 2^-22 of |s|,
// far more than the five roundings of this and the subtraction need, underflow included: a holds
// several 2^-126 of slack). The vector scans (none_head_scan_avx512.cpp) take the same steps.
inline void screen_interval(float s, float n, const RowBound& b, float* lo, float* up) {
  const float e = b.c * n + b.a;
  const float mag = s < 0.0F ? -s : s;
  const float e2 = e * (1.0F + 0x1p-10F) + mag * 0x1p-22F;
  *lo = s - e2;
  *up = s + e2;
}

// The threshold scans' running set: run[0, kept) holds the largest lower ends so far, decreasing;
// v (above *bar) goes in, the smallest drops out once k are kept, and *bar becomes run[k - 1]
// then (what the next one must pass).
inline void keep_largest(float v, float* run, int32_t k, int32_t* kept, float* bar) {
  int32_t at = *kept < k ? (*kept)++ : k - 1;
  for (; at > 0 && run[at - 1] < v; --at) run[at] = run[at - 1];
  run[at] = v;
  if (*kept == k) *bar = run[k - 1];
}

#if defined(__x86_64__) && defined(__GNUC__)
// s[t * ss + 16 p + j] for rows t < n of xp ([n][pairs_of(w.in)] from pack_screen_row), every lane
// j < 16 of panels [p_begin, p_end) of w (f32, f16 or bf16 panels; ss >= 16 w.n_panels). Only
// after cpu_has_avx512_bf16().
void head_screen_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t n,
                            float* s, int64_t ss);

// The k-th largest lower end lo_o over o < out of one row's screened values s (norms and s padded
// to a multiple of 16 floats; 1 <= k <= out; run: k floats of scratch), -inf when fewer than k are
// above -inf; NaN when some s_o is not finite. AVX-512F.
float screen_threshold_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                              float* run);
// Writes to cand, in increasing o, every o < out whose upper end up_o >= t, and returns how many;
// -1 as soon as there would be more than max. AVX-512F.
int64_t screen_candidates_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                                 int32_t* cand, int64_t max);

namespace emulated {  // the same files compiled against SIMDe, for tests on CPUs without AVX512-BF16
void head_screen_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t n,
                            float* s, int64_t ss);
float screen_threshold_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                              float* run);
int64_t screen_candidates_avx512(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                                 int32_t* cand, int64_t max);
}  // namespace emulated
#endif

}  // namespace loom_none
