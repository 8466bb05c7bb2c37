// SDK: the searches behind llama.cpp's reference quantizers of the GGUF K-quants
// (sdk_gguf_kquants.hpp): make_qkx2_quants (asymmetric levels, Q2_K/Q5_K), make_q3_quants
// (symmetric, Q3_K) and the nearest IQ4_NL level (IQ4_XS), with the rounding and the constants
// they share. Each repeats llama.cpp's float arithmetic operation for operation, so the
// quantizers built on them give llama.cpp's bytes.
#pragma once

#include <cmath>
#include <cstdint>

#include "loom/sdk_gguf_legacy.hpp"  // kIq4nlValues, iq4_nl_nearest

namespace loom::sdk::gguf {

namespace kquant {
constexpr int kValues = 256;  // values per super-block (QK_K)
// Round to nearest, ties to even: ggml's nearest_int (its 1.5 * 2^23 trick) on every value it
// is given here, and lrintf in the default rounding mode.
inline int round_int(float v) { return static_cast<int>(std::lrintf(v)); }
inline int clamp_int(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }
constexpr float kGroupMaxEps = 1e-15f;  // ggml's GROUP_MAX_EPS: a smaller group is all zero
}  // namespace kquant

// IQ4_NL/IQ4_XS's 16 non-uniform levels (ggml's kvalues_iq4nl; one table, sdk_gguf_legacy.hpp's).
inline constexpr const int8_t* kIQ4NL = kIq4nlValues;

namespace kquant {

// Asymmetric levels 0..nmax for n values: x ~ scale * L - min_out. Starts from the (min, max)
// grid, then tries nstep + 1 stretched grids (rmin + rdelta * is extra levels) and keeps the one
// whose weighted least-squares (scale, min) fit gives the smallest weighted |error| (use_mad) or
// squared error. Returns the scale; *the_min is the (non-negative) offset. make_qkx2_quants.
inline float qkx2_search(int n, int nmax, const float* x, const float* weights, uint8_t* L, float* the_min,
                         uint8_t* aux, float rmin, float rdelta, int nstep, bool use_mad) {
  float min = x[0], max = x[0];
  float sum_w = weights[0];
  float sum_x = sum_w * x[0];
  for (int i = 1; i < n; ++i) {
    if (x[i] < min) min = x[i];
    if (x[i] > max) max = x[i];
    const float w = weights[i];
    sum_w += w;
    sum_x += w * x[i];
  }
  if (min > 0) min = 0;
  if (max == min) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    *the_min = -min;
    return 0.0f;
  }
  float iscale = static_cast<float>(nmax) / (max - min);
  float scale = 1 / iscale;
  float best_error = 0;
  for (int i = 0; i < n; ++i) {
    L[i] = static_cast<uint8_t>(clamp_int(round_int(iscale * (x[i] - min)), 0, nmax));
    float diff = scale * static_cast<float>(L[i]) + min - x[i];
    diff = use_mad ? std::fabs(diff) : diff * diff;
    best_error += weights[i] * diff;
  }
  for (int is = 0; is <= nstep; ++is) {
    iscale = (rmin + rdelta * static_cast<float>(is) + static_cast<float>(nmax)) / (max - min);
    float sum_l = 0, sum_l2 = 0, sum_xl = 0;
    for (int i = 0; i < n; ++i) {
      const int l = clamp_int(round_int(iscale * (x[i] - min)), 0, nmax);
      aux[i] = static_cast<uint8_t>(l);
      const float w = weights[i], fl = static_cast<float>(l);
      sum_l += w * fl;
      sum_l2 += w * fl * fl;
      sum_xl += w * fl * x[i];
    }
    const float D = sum_w * sum_l2 - sum_l * sum_l;
    if (D > 0) {
      float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
      float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
      if (this_min > 0) {
        this_min = 0;
        this_scale = sum_xl / sum_l2;
      }
      float cur_error = 0;
      for (int i = 0; i < n; ++i) {
        float diff = this_scale * static_cast<float>(aux[i]) + this_min - x[i];
        diff = use_mad ? std::fabs(diff) : diff * diff;
        cur_error += weights[i] * diff;
      }
      if (cur_error < best_error) {
        for (int i = 0; i < n; ++i) L[i] = aux[i];
        best_error = cur_error;
        scale = this_scale;
        min = this_min;
      }
    }
  }
  *the_min = -min;
  return scale;
}

// Symmetric levels -nmax..nmax-1 (stored + nmax) for n values, weights x^2: the grid that maps the
// value of largest magnitude to -nmax, then up to 5 passes moving single values to the level
// that raises sumlx^2 / suml2 (the fit's explained energy). Returns the scale. make_q3_quants
// with do_rmse.
inline float q3_search(int n, int nmax, const float* x, int8_t* L) {
  float max = 0, amax = 0;
  for (int i = 0; i < n; ++i) {
    const float ax = std::fabs(x[i]);
    if (ax > amax) {
      amax = ax;
      max = x[i];
    }
  }
  if (amax < kGroupMaxEps) {
    for (int i = 0; i < n; ++i) L[i] = 0;
    return 0.0f;
  }
  const float iscale = static_cast<float>(-nmax) / max;
  float sumlx = 0, suml2 = 0;
  for (int i = 0; i < n; ++i) {
    const int l = clamp_int(round_int(iscale * x[i]), -nmax, nmax - 1);
    L[i] = static_cast<int8_t>(l);
    const float w = x[i] * x[i], fl = static_cast<float>(l);
    sumlx += w * x[i] * fl;
    suml2 += w * fl * fl;
  }
  for (int itry = 0; itry < 5; ++itry) {
    int n_changed = 0;
    for (int i = 0; i < n; ++i) {
      const float w = x[i] * x[i], li = static_cast<float>(L[i]);
      float slx = sumlx - w * x[i] * li;
      if (slx > 0) {
        float sl2 = suml2 - w * li * li;
        const int new_l = clamp_int(round_int(x[i] * sl2 / slx), -nmax, nmax - 1);
        if (new_l != L[i]) {
          const float fl = static_cast<float>(new_l);
          slx += w * x[i] * fl;
          sl2 += w * fl * fl;
          if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
            L[i] = static_cast<int8_t>(new_l);
            sumlx = slx;
            suml2 = sl2;
            ++n_changed;
          }
        }
      }
    }
    if (!n_changed) break;
  }
  for (int i = 0; i < n; ++i) L[i] = static_cast<int8_t>(L[i] + nmax);
  return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

// The index of the level of kIQ4NL nearest x (ties to the upper): best_index_int8.
inline int iq4_nearest(float x) { return iq4_nl_nearest(x); }

// Q2_K/Q3_K's 2-bit code planes: value 128h + 32k + l at bits 2k of qs[32h + l].
inline void pack_2bit(const uint8_t* L, uint8_t* qs) {
  for (int h = 0; h < 2; ++h)
    for (int l = 0; l < 32; ++l)
      qs[32 * h + l] = static_cast<uint8_t>(L[128 * h + l] | (L[128 * h + l + 32] << 2) | (L[128 * h + l + 64] << 4) |
                                            (L[128 * h + l + 96] << 6));
}

}  // namespace kquant

}  // namespace loom::sdk::gguf
