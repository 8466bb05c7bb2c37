// The screen's error bound (none_head_screen.hpp): the weight row norms and, per row of x, the
// bf16 pairs vdpbf16ps reads and the coefficients of |y_o - s_o| <= c N_o + a.
//
// Derivation, one row. x: the f32 row; x^ = bf16(x) (nearest even); x~ = x^ with bf16 subnormals
// as zero (vdpbf16ps takes denormal inputs as zero). w = W[o] as stored (exact in f32), N = ||w||;
// w~ = what vdpbf16ps multiplies: bf16(w) by vcvtne2ps2bf16 (nearest even, denormal inputs as
// zero), bf16 weights as stored, subnormals as zero. d = 2^-8 (bf16's unit roundoff) for f16 and
// f32 weights, 0 for bf16 ones. u = 2^-24, m = 2^-126 (the smallest normal float), in <= 2^16.
//  (1) |x.w - x~.w~| <= ||x - x~|| N + ||x~|| ||w - w~||, with ||x - x~|| <= ||x - x^|| + sqrt(in) m
//      (a flushed element is below m), ||w - w~|| <= d N + sqrt(in) m, ||x~|| <= ||x^||.
//  (2) linear's value y is one FMA chain, a rounding per k: |y - x.w| <= g_e sum|x_k w_k| + in m
//      <= g_e ||x|| N + in m (Cauchy-Schwarz), g_e = 1.01 in u; the m terms cover underflow, and a
//      host running with flush-to-zero (each rounding then off by under m), as do the
//      sqrt(in) m (||x|| + N) terms below for denormals-are-zero.
//  (3) s is a chain of in / 2 + 1 vdpbf16ps steps, each adding two products exact in f32
//      (8 x 8 significant bits; below m flushed) with at most two roundings:
//      |s - x~.w~| <= g_s sum|x~_k w~_k| + (2 in + 2) m, sum|x~ w~| <= ||x^|| (1 + d) N, and
//      g_s = 2.02 (in + 2) u: twice the nearest-even constant, so the bound holds even where an
//      implementation rounds a step by up to an ulp (the SDM says nearest even).
// So |y - s| <= c N + a with
//      c = ||x - x^|| + d ||x^|| + g_e ||x|| + g_s (1 + d) ||x^|| + 2 sqrt(in) m,
//      a = m (sqrt(in) (||x|| + 2 ||x^||) + 3 in + 8)   (8 m: slack for screen_interval's underflows).
// The norms are summed in double (squares of floats are exact there; the sums' relative error is
// below in 2^-53), then scaled by 1 + 2^-20 before rounding to float, so each stored value is at
// least the real one. Nothing here overflows a chain: ||x|| N_max <= 2^126 is required, and every
// partial sum of either chain stays below (1 + d)^2 (1 + g) ||x|| N.
#include <cmath>

#include "loom/sdk_half.hpp"
#include "none_bf16.hpp"
#include "none_head_screen.hpp"

namespace loom_none {

void head_norms(const PanelView& w, int64_t p_begin, int64_t p_end, float* norms, bool pairs) {
  for (int64_t p = p_begin; p < p_end; ++p) {
    double sq[kPanel] = {};
    for (int64_t k = 0; k < w.in; ++k)
      for (int64_t j = 0; j < kPanel; ++j) {
        const double v = weight_element(w, pairs, p, k, j);
        sq[j] += v * v;
      }
    for (int64_t j = 0; j < kPanel; ++j) norms[p * kPanel + j] = round_up(std::sqrt(sq[j]));
  }
}

bool pack_screen_row(const float* x, int64_t in, loom_dtype w_dtype, float max_norm, uint32_t* xp, RowBound* b) {
  if (in > (int64_t{1} << 16)) return false;
  double xx = 0, hh = 0, dd = 0;  // ||x||^2, ||x^||^2, ||x - x^||^2
  const auto add = [&](float v, uint16_t h) {
    const double vh = loom::sdk::bf16_to_f32(h);
    xx += static_cast<double>(v) * v;
    hh += vh * vh;
    dd += (v - vh) * (v - vh);  // v - bf16(v) is exact in double
  };
  for (int64_t k = 0; k < in; k += 2) {
    const float hi = k + 1 < in ? x[k + 1] : 0.0F;
    const uint32_t pair = bf16_pair(x[k], hi);
    xp[k / 2] = pair;
    add(x[k], static_cast<uint16_t>(pair));
    add(hi, static_cast<uint16_t>(pair >> 16));
  }
  const double nx = std::sqrt(xx), nh = std::sqrt(hh), nd = std::sqrt(dd);
  if (!(nx * static_cast<double>(max_norm) <= 0x1p126) || !std::isfinite(nh) || !std::isfinite(nd)) return false;
  const double d = w_dtype == LOOM_DTYPE_BF16 ? 0.0 : 0x1p-8;
  const double m = 0x1p-126, root = std::sqrt(static_cast<double>(in)), n = static_cast<double>(in);
  const double g_e = 1.01 * n * 0x1p-24, g_s = 2.02 * (n + 2) * 0x1p-24;
  const double c = nd + d * nh + g_e * nx + g_s * (1 + d) * nh + 2 * root * m;
  const double a = m * (root * (nx + 2 * nh) + 3 * n + 8);
  b->c = round_up(c);
  b->a = round_up(a);
  return std::isfinite(b->c);
}

}  // namespace loom_none
