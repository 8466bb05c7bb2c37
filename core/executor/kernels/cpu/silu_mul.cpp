#include "core/executor/kernels/cpu/silu_mul.hpp"

#include <algorithm>
#include <cmath>

#include "core/executor/kernels/cpu/parallel.hpp"
#include "loom/sdk_simd_exp.hpp"

namespace loom::cpu {
namespace {
constexpr int64_t kChunk = 4096;  // elements per work item
constexpr int64_t kBlock = 256;   // elements per exp pass: the exp values stay in L1

// Portable: two passes per full block, so std::exp stays a scalar libm call and the divide and
// multiply, out of the call's way and over a local array of fixed length, vectorise even at -O2
// (IEEE division and multiplication: the bits of the one-pass formula).
// GeGLU's z(g) = 2 sqrt(2/pi) (g + 0.044715 g^3), written g * (c0 + c1 g^2) in both kernels.
constexpr float kGeluC0 = 1.5957691216057308f;           // 2 sqrt(2/pi)
constexpr float kGeluC1 = 1.5957691216057308f * 0.044715f;

inline float gelu_z(float g) { return g * (kGeluC0 + kGeluC1 * (g * g)); }

template <bool kGelu>
void gated_portable(const float* gate, const float* up, float* out, int64_t begin, int64_t stop) {
  float e[kBlock];
  int64_t b = begin;
  for (; b + kBlock <= stop; b += kBlock) {
    for (int64_t i = 0; i < kBlock; ++i) e[i] = std::exp(-(kGelu ? gelu_z(gate[b + i]) : gate[b + i]));
    for (int64_t i = 0; i < kBlock; ++i) e[i] = gate[b + i] / (1.0f + e[i]) * up[b + i];
    std::copy(e, e + kBlock, out + b);
  }
  for (; b < stop; ++b) out[b] = gate[b] / (1.0f + std::exp(-(kGelu ? gelu_z(gate[b]) : gate[b]))) * up[b];
}

#ifdef LOOM_SDK_HAVE_EXP8_AVX2
// AVX2+FMA: 8 at a time with exp8 (about 1 ulp; libm's scalar expf was ~2% of a prefill). The
// divide and multiply are IEEE. The ragged end goes through an 8-lane copy, so every element gets
// the same arithmetic wherever it lies: a token's activations do not depend on its batch. No
// standard-library template is used in this target region, so no AVX2 copy of one can be picked by
// the linker for the portable code.
#pragma GCC push_options
#pragma GCC target("avx2,fma")
template <bool kGelu>
inline void gated8(const float* g, const float* u, float* o) {
  const __m256 gv = _mm256_loadu_ps(g);
  __m256 z = gv;
  if constexpr (kGelu)  // no FMA: the portable kernel's roundings, step for step
    z = _mm256_mul_ps(gv, _mm256_add_ps(_mm256_set1_ps(kGeluC0),
                                        _mm256_mul_ps(_mm256_set1_ps(kGeluC1), _mm256_mul_ps(gv, gv))));
  const __m256 e = sdk::exp8_avx2(_mm256_sub_ps(_mm256_setzero_ps(), z));
  _mm256_storeu_ps(o, _mm256_mul_ps(_mm256_div_ps(gv, _mm256_add_ps(_mm256_set1_ps(1.0f), e)), _mm256_loadu_ps(u)));
}

template <bool kGelu>
void gated_avx2(const float* gate, const float* up, float* out, int64_t begin, int64_t stop) {
  int64_t i = begin;
  for (; i + 8 <= stop; i += 8) gated8<kGelu>(gate + i, up + i, out + i);
  if (i < stop) {
    float g[8] = {}, u[8] = {}, o[8];
    for (int64_t j = 0; j < stop - i; ++j) {
      g[j] = gate[i + j];
      u[j] = up[i + j];
    }
    gated8<kGelu>(g, u, o);
    for (int64_t j = 0; j < stop - i; ++j) out[i + j] = o[j];
  }
}
#pragma GCC pop_options

bool cpu_has_avx2_fma() { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

template <bool kGelu>
void gated(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool) {
#ifdef LOOM_SDK_HAVE_EXP8_AVX2
  static const bool simd = cpu_has_avx2_fma();
#endif
  const int64_t n_chunks = (n + kChunk - 1) / kChunk;
  parallel_rows(pool, n_chunks, kChunk * 8, [&](int64_t begin, int64_t end) {
    const int64_t stop = std::min(n, end * kChunk);
#ifdef LOOM_SDK_HAVE_EXP8_AVX2
    if (simd) return gated_avx2<kGelu>(gate, up, out, begin * kChunk, stop);
#endif
    gated_portable<kGelu>(gate, up, out, begin * kChunk, stop);
  });
}

}  // namespace

void silu_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool) {
  gated<false>(gate, up, out, n, pool);
}

void gelu_tanh_mul(const float* gate, const float* up, float* out, int64_t n, ThreadPool* pool) {
  gated<true>(gate, up, out, n, pool);
}

}  // namespace loom::cpu
