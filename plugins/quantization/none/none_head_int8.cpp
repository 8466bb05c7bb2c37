// The int8 screen's copy, its row packing and bound, and the portable forms of its kernel and
// scans (none_head_int8.hpp).
//
// Bound, one row x against one output o. w = W[o] as stored (exact in f32), N = ||w||; w^ = d q_o
// (the copy's value, real), r = ||w - w^|| <= rho N (rho: the head's largest ratio, rounded up);
// x^ = e_b q_x blockwise, X = ||x||, X^ = ||x^||, R = ||x - x^||. u = 2^-24, m = 2^-126, in <= 2^16,
// nb = in_pad / 32.
//  (1) |x.w - x^.w^| <= ||w - w^|| X + ||w^|| R <= rho N X + (1 + rho) N R.
//  (2) linear's value y is one FMA chain, as in none_head_bound.cpp: |y - x.w| <= g_e X N + in m,
//      g_e = 1.01 in u, plus sqrt(in) m (N + X) where a host reads subnormal inputs as zero.
//  (3) s: every S_b is exact (|S_b| <= 32 * 127^2 < 2^24, so float(S_b) is too); the chain of nb
//      FMAs and the final product round nb + 1 times: |s - x^.w^| <= g_s sum_k |w^_k x^_k| + (nb +
//      2) m <= g_s (1 + rho) N X^ + (nb + 2) m, g_s = 2.02 (nb + 1) u (twice the constant, as the
//      bf16 bound takes it). Scales below m are stored as 0, so no subnormal scale enters a
//      product; a subnormal acc read as zero by the product costs at most m d_o <= m N.
// So |y - s| <= c N + a with
//      c = rho X + (1 + rho) R + g_e X + g_s (1 + rho) X^ + (sqrt(in) + 2) m,
//      a = m (sqrt(in) X + in + nb + 12)   (8 m of it: slack for screen_interval's underflows).
// Under compute = "bf16" (HeadChain::kPairs), x above is bf16(x) (nearest even, as the pair
// kernels round it; the int8 row is made from it) and w the bf16 weights of the pair panels (the
// copy, rho and N are made from them), so x.w is the real value of what the kernel multiplies,
// and (1) and (3) hold as they stand. Only (2) changes: y is a chain of in / 2 + 1 vdpbf16ps
// steps of two products, exact in f32, with at most two roundings each, inputs below m read as
// zero and results below m flushed (none_head_bound.cpp's (3)): |y - x.w| <= g_e X N +
// sqrt(in) m (N + X) + (2 in + 2) m with g_e = 2.02 (in + 2) u. So g_e takes that value and a
// gains in + 2 m.
// Sums in double, each result scaled by 1 + 2^-20 before rounding to float (the stored values are
// at least the real ones). X <= 2^100 and X N_max <= 2^126 are required, so no chain overflows.
#include "none_head_int8.hpp"

#include <algorithm>
#include <cmath>

#include "loom/sdk_half.hpp"

namespace loom_none {

namespace {

constexpr float kMinNormal = 0x1p-126F;

// q = round(v / d) (nearest, ties to even) clamped to [-127, 127]; d > 0.
int32_t quantize(float v, float d) {
  const float r = std::nearbyint(v / d);
  return static_cast<int32_t>(std::clamp(r, -127.0F, 127.0F));
}

// The scale of values whose largest magnitude is amax: amax / 127, or 0 below the smallest normal.
float scale_of(float amax) {
  const float d = amax / 127.0F;
  return d >= kMinNormal ? d : 0.0F;
}

}  // namespace

void int8_head_shape(const PanelView& w, Int8Head* h) {
  h->out = w.out;
  h->in = w.in;
  h->in_pad = (w.in + kInt8Block - 1) / kInt8Block * kInt8Block;
  h->n_panels = w.n_panels;
  h->q.assign(static_cast<size_t>(h->n_panels * h->in_pad * kPanel), 128);
  h->scale.assign(static_cast<size_t>(h->n_panels * kPanel), 0.0F);
  h->rho = 0.0F;
}

double int8_head_panels(const PanelView& w, int64_t p_begin, int64_t p_end, Int8Head* h, bool pairs) {
  double worst = 0.0;
  const int64_t k4s = h->in_pad / 4;
  // Two passes over each panel in its own order (k-major, 16 outputs per k): the scales, then the
  // bytes and the residuals.
  for (int64_t p = p_begin; p < p_end; ++p) {
    const int64_t live = std::min(kPanel, w.out - p * kPanel);
    float amax[kPanel] = {};
    bool finite[kPanel];
    std::fill_n(finite, kPanel, true);
    for (int64_t k = 0; k < w.in; ++k)
      for (int64_t j = 0; j < live; ++j) {
        const auto v = static_cast<float>(weight_element(w, pairs, p, k, j));
        finite[j] = finite[j] && std::isfinite(v);
        amax[j] = std::max(amax[j], std::fabs(v));
      }
    float d[kPanel] = {};
    for (int64_t j = 0; j < live; ++j) {
      // A row that is not finite keeps scale 0 and q = 0; its norm is infinite too, so no row of x
      // is screened against this head.
      d[j] = finite[j] ? scale_of(amax[j]) : 0.0F;
      h->scale[static_cast<size_t>(p * kPanel + j)] = d[j];
    }
    double nn[kPanel] = {}, rr[kPanel] = {};
    uint8_t* q = h->q.data() + p * k4s * kPanel * 4;
    for (int64_t k = 0; k < w.in; ++k)
      for (int64_t j = 0; j < live; ++j) {
        const auto v = static_cast<float>(weight_element(w, pairs, p, k, j));
        const int32_t qk = d[j] > 0.0F ? quantize(v, d[j]) : 0;
        q[((k / 4) * kPanel + j) * 4 + k % 4] = static_cast<uint8_t>(qk + 128);
        const double diff = static_cast<double>(v) - static_cast<double>(d[j]) * qk;
        nn[j] += static_cast<double>(v) * v;
        rr[j] += diff * diff;
      }
    for (int64_t j = 0; j < live; ++j) {
      if (!finite[j]) worst = INFINITY;
      else if (nn[j] > 0) worst = std::max(worst, std::sqrt(rr[j]) / std::sqrt(nn[j]) * kBoundUp);
    }
  }
  return worst;
}

bool pack_int8_row(const float* x, int64_t in, int64_t in_pad, float rho, float max_norm, int8_t* q, float* e,
                   int32_t* sum, RowBound* b, HeadChain chain) {
  if (in > (int64_t{1} << 16) || in_pad < in || in_pad % kInt8Block != 0 || !std::isfinite(rho)) return false;
  const bool pairs = chain == HeadChain::kPairs;
  // The row the bound is about: x, or bf16(x) as the pair kernels round it.
  const auto value = [&](int64_t k) { return pairs ? loom::sdk::bf16_to_f32(loom::sdk::f32_to_bf16(x[k])) : x[k]; };
  double xx = 0, hh = 0, dd = 0;  // ||x||^2, ||x^||^2, ||x - x^||^2
  for (int64_t b0 = 0; b0 < in_pad; b0 += kInt8Block) {
    const int64_t end = std::min(in, b0 + kInt8Block);
    float amax = 0.0F;
    for (int64_t k = b0; k < end; ++k) {
      const float v = value(k);
      if (!std::isfinite(v)) return false;
      amax = std::max(amax, std::fabs(v));
    }
    const float d = scale_of(amax);
    int32_t s = 0;
    for (int64_t k = b0; k < b0 + kInt8Block; ++k) {
      const float v = k < end ? value(k) : 0.0F;
      const int32_t qk = d > 0.0F ? quantize(v, d) : 0;
      q[k] = static_cast<int8_t>(qk);
      s += qk;
      const double vh = static_cast<double>(d) * qk;
      xx += static_cast<double>(v) * v;
      hh += vh * vh;
      dd += (v - vh) * (v - vh);
    }
    e[b0 / kInt8Block] = d;
    sum[b0 / kInt8Block] = s;
  }
  const double nx = std::sqrt(xx), nh = std::sqrt(hh), nd = std::sqrt(dd);
  if (!(nx <= 0x1p100) || !(nx * static_cast<double>(max_norm) <= 0x1p126)) return false;
  const double m = 0x1p-126, root = std::sqrt(static_cast<double>(in)), n = static_cast<double>(in);
  const double nb = static_cast<double>(in_pad / kInt8Block), r = rho;
  const double g_e = pairs ? 2.02 * (n + 2) * 0x1p-24 : 1.01 * n * 0x1p-24, g_s = 2.02 * (nb + 1) * 0x1p-24;
  const double c = r * nx + (1 + r) * nd + g_e * nx + g_s * (1 + r) * nh + (root + 2) * m;
  const double a = m * (root * nx + n + (pairs ? n + 2 : 0) + nb + 12);
  const float cf = round_up(c), af = round_up(a);
  if (!std::isfinite(cf) || !std::isfinite(af)) return false;
  b->c = cf;
  b->a = af;
  return true;
}

void head_screen_int8_portable(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                               const int32_t* sum, int64_t n, float* s, int64_t ss) {
  (void)sum;  // the biased bytes are unbiased here directly
  const int64_t k4s = h.in_pad / 4, nb = h.in_pad / kInt8Block;
  for (int64_t p = p_begin; p < p_end; ++p)
    for (int64_t t = 0; t < n; ++t)
      for (int64_t j = 0; j < kPanel; ++j) {
        float acc = 0.0F;
        for (int64_t b = 0; b < nb; ++b) {
          int32_t sb = 0;
          for (int64_t k = b * kInt8Block; k < (b + 1) * kInt8Block; ++k) {
            const int32_t wq = h.q[static_cast<size_t>(((p * k4s + k / 4) * kPanel + j) * 4 + k % 4)] - 128;
            sb += wq * q[t * h.in_pad + k];
          }
          acc = std::fma(static_cast<float>(sb), e[t * nb + b], acc);
        }
        s[t * ss + p * kPanel + j] = acc * h.scale[static_cast<size_t>(p * kPanel + j)];
      }
}

float screen_threshold_portable(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                                float* run) {
  int32_t kept = 0;  // run[0, kept): the largest lower ends so far, decreasing
  float bar = -INFINITY;
  bool bad = false;
  for (int64_t o = 0; o < out; ++o) {
    bad = bad || !std::isfinite(s[o]);
    float lo = 0, hi = 0;
    screen_interval(s[o], norms[o], b, &lo, &hi);
    if (lo > bar) keep_largest(lo, run, k, &kept, &bar);
  }
  if (bad) return NAN;
  return kept < k ? -INFINITY : run[k - 1];
}

int64_t screen_candidates_portable(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                                   int32_t* cand, int64_t max) {
  int64_t count = 0;
  for (int64_t o = 0; o < out; ++o) {
    float lo = 0, hi = 0;
    screen_interval(s[o], norms[o], b, &lo, &hi);
    if (!(hi >= t)) continue;
    if (count == max) return -1;
    cand[count++] = static_cast<int32_t>(o);
  }
  return count;
}

}  // namespace loom_none
