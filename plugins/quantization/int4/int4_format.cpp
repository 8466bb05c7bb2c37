// Group-wise INT4 quantization, packing and the portable dequantization (see int4_format.hpp).
#include "int4_format.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace loom_int4 {

void quantize_group(const float* v, int64_t n, bool zero_point, uint8_t* q, float* scale, uint8_t* zero) {
  if (!zero_point) {
    float amax = 0;
    for (int64_t k = 0; k < n; ++k) amax = std::max(amax, std::fabs(v[k]));
    *scale = amax / 7.0f;
    *zero = 8;
    for (int64_t k = 0; k < n; ++k)
      q[k] = amax == 0 ? 8 : static_cast<uint8_t>(std::clamp(std::nearbyint(v[k] / *scale), -8.0f, 7.0f) + 8.0f);
    return;
  }
  float lo = 0, hi = 0;  // the range always holds 0, so a zero weight stays exactly 0
  for (int64_t k = 0; k < n; ++k) {
    lo = std::min(lo, v[k]);
    hi = std::max(hi, v[k]);
  }
  *scale = (hi - lo) / 15.0f;
  if (*scale == 0) {
    *zero = 0;
    for (int64_t k = 0; k < n; ++k) q[k] = 0;
    return;
  }
  const float z = std::clamp(std::nearbyint(-lo / *scale), 0.0f, 15.0f);
  *zero = static_cast<uint8_t>(z);
  for (int64_t k = 0; k < n; ++k)
    q[k] = static_cast<uint8_t>(std::clamp(std::nearbyint(v[k] / *scale) + z, 0.0f, 15.0f));
}

namespace {

constexpr int64_t kMaxGroup = 128;
constexpr int kClipSteps = 5;  // symmetric: range shrink factors 1 - i / 20, i = 0..5, down to 3/4
constexpr float kClipStep = 1.0f / 20.0f;
constexpr int kZeroShift = 1;  // with zero points: z0 - 1 .. z0 + 1 around the range's own
constexpr int kRefits = 4;    // rounds of (round, least-squares scale) per starting grid

// One rounding of a group onto the grid (scale, zero) into t (0..15 around z with zero points,
// -8..7 around 8 without), with what gives the squared error of any scale s for these integers
// d = t - z without another pass: sum((d s - v)^2) = vv - 2 s vd + s^2 dd.
struct Rounding {
  double vd = 0;
  double dd = 0;
  float worst = 0;  // max |d * scale - v|: the per-weight error at the rounding's own scale
  bool changed = false;  // whether t differs from what it held before
};

Rounding round_group(const float* v, int64_t n, bool zero_point, float scale, int zero, uint8_t* t) {
  // x + 1.5 * 2^23 - 1.5 * 2^23 rounds |x| < 2^22 to an integer, half to even (the default
  // rounding mode) without a libm call; x is clamped first, which the grid's clamp makes harmless.
  constexpr float kRound = 0x1.8p23f;
  const float inv = 1.0f / scale, lo = zero_point ? 0.0f : -8.0f, hi = zero_point ? 15.0f : 7.0f;
  const float z = zero_point ? static_cast<float>(zero) : 0.0f, offset = zero_point ? 0.0f : 8.0f;
  Rounding r;
  float dd = 0;  // sums of squares of integers up to 15: exact in f32 for a group of 128
  for (int64_t k = 0; k < n; ++k) {
    const float x = std::clamp(v[k] * inv, -32.0f, 32.0f);
    const float q = std::clamp(((x + kRound) - kRound) + z, lo, hi);  // the grid point, minus offset
    const uint8_t code = static_cast<uint8_t>(q + offset);
    r.changed |= code != t[k];
    t[k] = code;
    const float d = q - z;
    r.worst = std::max(r.worst, std::fabs(d * scale - v[k]));
    r.vd += static_cast<double>(d) * v[k];
    dd += d * d;
  }
  r.dd = dd;
  return r;
}

// Whether every weight of the group dequantizes within bound of its value.
bool within(const float* v, int64_t n, const uint8_t* t, float scale, int zero, float bound) {
  for (int64_t k = 0; k < n; ++k)
    if (std::fabs(static_cast<float>(static_cast<int32_t>(t[k]) - zero) * scale - v[k]) > bound) return false;
  return true;
}

// quantize_group, then the search of int4_format.hpp; the first candidate of least squared
// error within the per-weight bound is kept, so the result is deterministic.
void search_group(const float* v, int64_t n, bool zero_point, uint8_t* q, float* scale, uint8_t* zero) {
  quantize_group(v, n, zero_point, q, scale, zero);
  if (*scale == 0 || n > kMaxGroup) return;
  float lo = 0, hi = 0, amax = 0;
  double vv = 0;
  for (int64_t k = 0; k < n; ++k) {
    lo = std::min(lo, v[k]);
    hi = std::max(hi, v[k]);
    amax = std::max(amax, std::fabs(v[k]));
    vv += static_cast<double>(v[k]) * v[k];
  }
  const float bound = zero_point ? (hi - lo) / 15.0f : amax / 7.0f / 2.0f;
  double best = std::numeric_limits<double>::infinity();
  uint8_t t[kMaxGroup];
  for (int64_t k = 0; k < n; ++k) t[k] = q[k];
  auto keep = [&](double err, float s, int z) {
    best = err;
    *scale = s;
    *zero = static_cast<uint8_t>(z);
    for (int64_t k = 0; k < n; ++k) q[k] = t[k];
  };
  if (within(v, n, q, *scale, *zero, bound)) {
    double err = 0;
    for (int64_t k = 0; k < n; ++k) {
      const double d = static_cast<float>(static_cast<int32_t>(q[k]) - int32_t(*zero)) * *scale - v[k];
      err += d * d;
    }
    best = err;
  }
  for (int i = 0; i <= (zero_point ? 0 : kClipSteps); ++i) {
    const float f = 1.0f - static_cast<float>(i) * kClipStep;
    const float s0 = zero_point ? (hi - lo) * f / 15.0f : amax * f / 7.0f;
    const int z0 = zero_point ? static_cast<int>(std::clamp(std::nearbyint(-lo * f / s0), 0.0f, 15.0f)) : 8;
    const int shift = zero_point ? kZeroShift : 0;
    for (int z = std::max(0, z0 - shift); z <= std::min(15, z0 + shift); ++z) {
      float s = s0;
      for (int r = 0; r < kRefits; ++r) {
        const Rounding rd = round_group(v, n, zero_point, s, z, t);
        if (r > 0 && !rd.changed) break;  // the same integers: the same least-squares scale
        const double err = vv - 2.0 * s * rd.vd + static_cast<double>(s) * s * rd.dd;
        if (err < best && rd.worst <= bound) keep(err, s, z);
        if (!(rd.dd > 0)) break;
        const float refit = static_cast<float>(rd.vd / rd.dd);
        if (!(refit > 0) || !std::isfinite(refit)) break;
        const double refit_err = vv - 2.0 * refit * rd.vd + static_cast<double>(refit) * refit * rd.dd;
        if (refit_err < best && within(v, n, t, refit, z, bound)) keep(refit_err, refit, z);
        s = refit;
      }
    }
  }
}

}  // namespace

void pack_row(const uint8_t* q, int64_t n, uint32_t* words) {
  for (int64_t p = 0; p < (n + 7) / 8; ++p) words[p] = 0;
  for (int64_t k = 0; k < n; ++k) words[k / 8] |= static_cast<uint32_t>(q[k] & 0xFu) << (4 * (k % 8));
}

Int4Weight make_weight(int64_t out, int64_t in, int64_t group) {
  Int4Weight w;
  w.out = out;
  w.in = in;
  w.group = group;
  w.shift = group_shift(group);
  w.words_per_row = (in + 7) / 8;
  w.n_groups = (in + group - 1) / group;
  w.packed.assign(static_cast<size_t>(out * w.words_per_row), 0);
  w.scale.assign(static_cast<size_t>(out * w.n_groups), 0.0f);
  w.zero.assign(static_cast<size_t>(out * w.n_groups), 0);
  return w;
}

void quantize_row(const float* v, int64_t in, const RowQuant& rq, uint32_t* packed, float* scale, uint8_t* zero) {
  std::vector<uint8_t> q(static_cast<size_t>(in));
  const int64_t n_groups = (in + rq.group - 1) / rq.group;
  for (int64_t g = 0; g < n_groups; ++g) {
    const int64_t k0 = g * rq.group, len = std::min(rq.group, in - k0);
    if (rq.scale_search)
      search_group(v + k0, len, rq.zero_point, q.data() + k0, &scale[g], &zero[g]);
    else
      quantize_group(v + k0, len, rq.zero_point, q.data() + k0, &scale[g], &zero[g]);
  }
  pack_row(q.data(), in, packed);
}

void quantize_row(const float* v, const RowQuant& rq, Int4Weight& w, int64_t o) {
  RowQuant r = rq;
  r.group = w.group;
  quantize_row(v, w.in, r, w.packed.data() + o * w.words_per_row, w.scale.data() + o * w.n_groups,
               w.zero.data() + o * w.n_groups);
}

void quantize_row(const float* v, bool zero_point, Int4Weight& w, int64_t o) {
  RowQuant rq;
  rq.zero_point = zero_point;
  quantize_row(v, rq, w, o);
}

void dequant_portable(const Int4Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t o = o0 + j;
    const uint32_t* words = w.packed.data() + o * w.words_per_row;
    const float* s = w.scale.data() + o * w.n_groups;
    const uint8_t* z = w.zero.data() + o * w.n_groups;
    for (int64_t k = 0; k < w.in; ++k) {
      const int64_t g = k >> w.shift;
      dst[j * w.in + k] = static_cast<float>(static_cast<int32_t>(nibble(words, k)) - int32_t(z[g])) * s[g];
    }
  }
}

loom_quant::DequantKernels<Int4Weight> select_kernels(bool allow_simd) {
#ifdef LOOM_INT4_HAVE_AVX2
  if (allow_simd && loom_quant::cpu_has_avx2_fma()) return {tile_q_avx2, dequant_avx2, tile_f32_avx2, "avx2+fma"};
#else
  (void)allow_simd;
#endif
  return {nullptr, dequant_portable, loom_quant::tile_f32_portable, "portable"};
}

}  // namespace loom_int4
