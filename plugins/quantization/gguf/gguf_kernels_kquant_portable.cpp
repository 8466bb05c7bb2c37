// Portable K-quant kernels: per super-block the exact integer sums, then one float term per
// scale (d, and dmin for the types with mins), super-blocks folded in increasing order:
//   Q2_K, Q5_K  d*da * sum_s sc_s <q_s, a_s>  -  dmin*da * sum_s m_s * sum(a_s)
//   Q3_K        d*da * sum_s sc_s <q_s - 4, a_s>
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
template <class W, int kSub, int (*Value)(const W&, int), void (*ScaleMin)(const W&, int, int*, int*)>
float dot(const W* w, const g::BlockQ8_K* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0, msum = 0;
    for (int s = 0; s < g::kQKK / kSub; ++s) {
      int scale = 0, min = 0;
      ScaleMin(w[b], s, &scale, &min);
      int32_t p = 0, asum = 0;
      for (int l = 0; l < kSub; ++l) p += Value(w[b], kSub * s + l) * int32_t{a[b].qs[kSub * s + l]};
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
int q3_k_value(const g::BlockQ3_K& w, int e) { return g::q3_k_code(w, e) - 4; }
void q5_k_scale_min(const g::BlockQ5_K& w, int j, int* scale, int* min) { g::q5_k_scale_min(j, w.scales, scale, min); }
void iq4_xs_scale(const g::BlockIQ4_XS& w, int j, int* scale, int* min) {
  *scale = g::iq4_xs_scale(w, j);
  *min = 0;
}
int iq4_xs_value(const g::BlockIQ4_XS& w, int e) { return g::kIQ4NL[g::iq4_xs_code(w, e)]; }

}  // namespace

KQuantKernels portable_kquant_kernels() {
  return KQuantKernels{&kquant_tile<g::BlockQ2_K, &dot<g::BlockQ2_K, 16, &g::q2_k_code, &q2_k_scale_min>>,
                       &kquant_tile<g::BlockQ3_K, &dot<g::BlockQ3_K, 16, &q3_k_value, &q3_k_scale>>,
                       &kquant_tile<g::BlockQ5_K, &dot<g::BlockQ5_K, 32, &g::q5_k_code, &q5_k_scale_min>>,
                       &kquant_tile<g::BlockIQ4_XS, &dot<g::BlockIQ4_XS, 32, &iq4_xs_value, &iq4_xs_scale>>};
}

}  // namespace loom_gguf
