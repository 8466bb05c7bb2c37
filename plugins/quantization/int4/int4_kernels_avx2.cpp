// AVX2 kernels of quantization/int4, called only after cpu_has_avx2_fma(). Eight input
// channels are one packed word: broadcast it, shift lane i right by 4i (vpsrlvd), mask to the
// nibble, subtract the group's zero point, convert and scale: the portable dequant's values,
// in registers. A vector of 8 never straddles two groups (group sizes are multiples of 8).
#include <immintrin.h>

#include <cstdint>

#include "int4_format.hpp"

#ifdef LOOM_INT4_HAVE_AVX2

#pragma GCC push_options
#pragma GCC target("avx2,fma")

#include "common/dequant_gemm_avx2.hpp"

namespace loom_int4 {
namespace {

struct RowInt4 {
  const uint32_t* words;
  const float* scale;   // [n_groups]
  const uint8_t* zero;  // [n_groups]
  int shift;            // log2(group)
  __m256 vec(int64_t k) const {
    const __m256i shifts = _mm256_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28);
    const __m256i nib = _mm256_and_si256(_mm256_srlv_epi32(_mm256_set1_epi32(static_cast<int>(words[k >> 3])), shifts),
                                         _mm256_set1_epi32(0xF));
    const int64_t g = k >> shift;
    const __m256i q = _mm256_sub_epi32(nib, _mm256_set1_epi32(zero[g]));
    return _mm256_mul_ps(_mm256_cvtepi32_ps(q), _mm256_set1_ps(scale[g]));
  }
  float one(int64_t k) const {
    const int64_t g = k >> shift;
    return static_cast<float>(static_cast<int32_t>(nibble(words, k)) - int32_t(zero[g])) * scale[g];
  }
};

void rows_of(const Int4Weight& w, int64_t o0, int64_t n_rows, RowInt4* rows) {
  for (int64_t j = 0; j < n_rows; ++j) {
    const int64_t o = o0 + j;
    rows[j] = RowInt4{w.packed.data() + o * w.words_per_row, w.scale.data() + o * w.n_groups,
                      w.zero.data() + o * w.n_groups, w.shift};
  }
}

}  // namespace

void tile_q_avx2(const Int4Weight& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y,
                 int64_t ys) {
  RowInt4 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::tile<RowInt4>(rows, n_rows, x, xs, n, w.in, y, ys);
}

void dequant_avx2(const Int4Weight& w, int64_t o0, int64_t n_rows, float* dst) {
  RowInt4 rows[loom_quant::kTile];
  rows_of(w, o0, n_rows, rows);
  loom_quant::avx2::dequant<RowInt4>(rows, n_rows, w.in, dst);
}

void tile_f32_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys) {
  loom_quant::avx2::tile_f32(rows, n_rows, x, xs, n, in, y, ys);
}

}  // namespace loom_int4

#pragma GCC pop_options

#endif  // LOOM_INT4_HAVE_AVX2
