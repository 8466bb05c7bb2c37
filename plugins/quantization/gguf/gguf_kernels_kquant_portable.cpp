// Portable K-quant kernels: per super-block the exact integer sums, then one float term per
// scale (d, and dmin for the types with mins), super-blocks folded in increasing order:
//   Q2_K, Q4_K, Q5_K  d*da * sum_s sc_s <q_s, a_s>  -  dmin*da * sum_s m_s * sum(a_s)
//   Q3_K              d*da * sum_s sc_s <q_s - 4, a_s>
//   Q6_K              d*da * sum_s sc_s <q_s - 32, a_s>
//   IQ4_XS      d*da * sum_s ls_s <kIQ4NL[q_s], a_s>
// (Q8_K's bsums are the 16-value sums of a, so the min terms need no pass over the values.)
#include "gguf_kernels_kquant.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {
namespace {

namespace g = loom::sdk::gguf;
using loom::sdk::f16_to_f32;

// Per super-block: d*da * sum_s scale_s <value_s, a_s>  -  dmin*da * sum_s min_s * sum(a_s), over
// sub-blocks of kSub values (a multiple of Q8_K's 16-value bsums). Formats without mins give 0.
// The super-block's values are first unpacked to bytes in value order (Unpack: plain loops the
// compiler vectorizes), then multiplied.
template <class W, int kSub, void (*Unpack)(const W&, int8_t*), void (*ScaleMin)(const W&, int, int*, int*)>
float dot(const W* w, const g::BlockQ8_K* a, int64_t nb) {
  float sum = 0;
  int8_t v[g::kQKK];
  for (int64_t b = 0; b < nb; ++b) {
    Unpack(w[b], v);
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < g::kQKK / kSub; ++s) {
      int scale = 0, min = 0;
      ScaleMin(w[b], s, &scale, &min);
      int32_t p = 0, asum = 0;
      for (int l = 0; l < kSub; ++l) p += int32_t{v[kSub * s + l]} * int32_t{a[b].qs[kSub * s + l]};
      for (int k = 0; k < kSub / 16; ++k) asum += a[b].bsums[kSub / 16 * s + k];
      isum += scale * p;
      msum += min * asum;
    }
    float term = (f16_to_f32(w[b].d) * a[b].d) * static_cast<float>(isum);
    if constexpr (requires { w[b].dmin; }) term = term - (f16_to_f32(w[b].dmin) * a[b].d) * static_cast<float>(msum);
    sum += term;
  }
  return sum;
}

void q2_k_scale_min(const g::BlockQ2_K& w, int s, int* scale, int* min) {
  *scale = w.scales[s] & 0xF;
  *min = w.scales[s] >> 4;
}
void q3_k_scale(const g::BlockQ3_K& w, int s, int* scale, int* min) {
  *scale = g::q3_k_scale(w, s);
  *min = 0;
}

void q4_k_scale_min(const g::BlockQ4_K& w, int j, int* scale, int* min) { g::q4_k_scale_min(j, w.scales, scale, min); }
void q5_k_scale_min(const g::BlockQ5_K& w, int j, int* scale, int* min) { g::q5_k_scale_min(j, w.scales, scale, min); }
void q6_k_scale(const g::BlockQ6_K& w, int s, int* scale, int* min) {
  *scale = w.scales[s];
  *min = 0;
}
void iq4_xs_scale(const g::BlockIQ4_XS& w, int j, int* scale, int* min) {
  *scale = g::iq4_xs_scale(w, j);
  *min = 0;
}

// Values in order, as the SDK's accessors define them (q2_k_code, q3_k_code - 4, Q4_K's nibbles,
// q5_k_code, q6_k_code - 32, kIQ4NL[iq4_xs_code]), a plane of 32 at a time.
void q2_k_values(const g::BlockQ2_K& w, int8_t* v) {
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l) v[128 * h + 32 * k + l] = static_cast<int8_t>((w.qs[32 * h + l] >> (2 * k)) & 3);
}
void q3_k_values(const g::BlockQ3_K& w, int8_t* v) {
  for (int h = 0; h < 2; ++h)
    for (int k = 0; k < 4; ++k)
      for (int l = 0; l < 32; ++l)
        v[128 * h + 32 * k + l] = static_cast<int8_t>((((w.qs[32 * h + l] >> (2 * k)) & 3) |
                                                       (((w.hmask[l] >> (4 * h + k)) & 1) << 2)) - 4);
}
void q4_k_values(const g::BlockQ4_K& w, int8_t* v) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l) v[32 * j + l] = static_cast<int8_t>((w.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF);
}
void q6_k_values(const g::BlockQ6_K& w, int8_t* v) {
  for (int e = 0; e < g::kQKK; ++e) v[e] = static_cast<int8_t>(g::q6_k_code(w, e) - 32);
}
void q5_k_values(const g::BlockQ5_K& w, int8_t* v) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 32; ++l)
      v[32 * j + l] = static_cast<int8_t>(((w.qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF) | (((w.qh[l] >> j) & 1) << 4));
}
void iq4_xs_values(const g::BlockIQ4_XS& w, int8_t* v) {
  for (int j = 0; j < 8; ++j)
    for (int l = 0; l < 16; ++l) {
      v[32 * j + l] = g::kIQ4NL[w.qs[16 * j + l] & 0xF];
      v[32 * j + 16 + l] = g::kIQ4NL[w.qs[16 * j + l] >> 4];
    }
}

}  // namespace

KQuantKernels portable_kquant_kernels() {
  return KQuantKernels{&kquant_tile<g::BlockQ2_K, &dot<g::BlockQ2_K, 16, &q2_k_values, &q2_k_scale_min>>,
                       &kquant_tile<g::BlockQ3_K, &dot<g::BlockQ3_K, 16, &q3_k_values, &q3_k_scale>>,
                       &kquant_tile<g::BlockQ4_K, &dot<g::BlockQ4_K, 32, &q4_k_values, &q4_k_scale_min>>,
                       &kquant_tile<g::BlockQ5_K, &dot<g::BlockQ5_K, 32, &q5_k_values, &q5_k_scale_min>>,
                       &kquant_tile<g::BlockQ6_K, &dot<g::BlockQ6_K, 16, &q6_k_values, &q6_k_scale>>,
                       &kquant_tile<g::BlockIQ4_XS, &dot<g::BlockIQ4_XS, 32, &iq4_xs_values, &iq4_xs_scale>>};
}

}  // namespace loom_gguf
