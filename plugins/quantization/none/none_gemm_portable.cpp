// Portable kernels: plain C++ the compiler vectorises for the baseline ISA. -ffp-contract=off
// keeps every multiply and add separately rounded, so the order stated in none_gemm.hpp is the
// order executed.
#include "loom/sdk_half.hpp"
#include "none_gemm.hpp"

namespace loom_none {
namespace {

constexpr int kLanes = 8;
constexpr int kRows = 4;  // input rows per pass over a weight row

// out[r] = dot(x row r, w) for R rows of x (row stride xs). Each row's arithmetic is identical
// for every R.
template <int R>
inline void dot_rows(const float* __restrict w, const float* __restrict x, int64_t xs, int64_t n, float* out) {
  float acc[R][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * xs + i;
      for (int j = 0; j < kLanes; ++j) acc[r][j] += xr[j] * w[i + j];
    }
  }
  for (int r = 0; r < R; ++r) {
    float s = lane_sum(acc[r]);
    for (int64_t k = i; k < n; ++k) s += x[r * xs + k] * w[k];
    out[r] = s;
  }
}

}  // namespace

void tile_portable(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys, const void* /*next*/, int64_t /*next_bytes*/) {
  float res[kRows];
  int64_t t = 0;
  for (; t + kRows <= n; t += kRows) {
    for (int64_t j = 0; j < n_rows; ++j) {
      dot_rows<kRows>(rows[j], x + t * xs, xs, in, res);
      for (int r = 0; r < kRows; ++r) y[(t + r) * ys + j] = res[r];
    }
  }
  for (; t < n; ++t) {
    for (int64_t j = 0; j < n_rows; ++j) {
      dot_rows<1>(rows[j], x + t * xs, xs, in, res);
      y[t * ys + j] = res[0];
    }
  }
}

void widen_portable(const uint16_t* src, float* dst, int64_t n, bool bf16) {
  if (bf16) {
    for (int64_t i = 0; i < n; ++i) dst[i] = loom::sdk::bf16_to_f32(src[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) dst[i] = loom::sdk::f16_to_f32(src[i]);
  }
}

Kernels select_kernels(bool allow_simd) {
#ifdef LOOM_NONE_HAVE_AVX2
  if (allow_simd && cpu_has_avx2_fma_f16c()) return Kernels{tile_avx2, widen_f16c, tile_half_avx2, "avx2+fma"};
#else
  (void)allow_simd;
#endif
  return Kernels{tile_portable, widen_portable, nullptr, "portable"};
}

}  // namespace loom_none
