// The row-layout GEMM kernels the none plugin used before its weights moved to column panels
// (none_panel.hpp), kept only as the baseline of the micro-benchmark (none_gemm_bench.cpp; not
// part of the plugin): y = x W^T over one tile of f32 weight rows, and the f16/bf16 -> f32
// widening of weight rows. Each has a portable version and, on x86-64, an AVX2+FMA(+F16C) one.
//
// Batch invariance, the contract every kernel keeps on its own: y[t][j] is reduced in one fixed
// order (8 lanes, lane l summing k = l, l+8, ... in increasing k; the lanes combined by the tree
// ((0+1)+(2+3))+((4+5)+(6+7)); then the k % 8 tail in increasing k) whatever n is and however
// rows and features are grouped into register blocks. So a row gives the same bits alone or in
// any batch. The portable and AVX2 kernels differ from each other (the AVX2 one fuses the
// multiply-add), never within themselves.
#pragma once

#include <cstdint>

namespace loom_none {

// y[t * ys + j] = dot(x + t * xs, rows[j]) for t < n, j < n_rows; every row holds `in` floats.
// [next, next + next_bytes) is what the caller reads next (the following tile's weights; null
// when none): a kernel may prefetch it while it computes. It never changes a result.
using TileKernel = void (*)(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n,
                            int64_t in, float* y, int64_t ys, const void* next, int64_t next_bytes);
// tile on f16 (bf16 when bf16) weight rows, widened in registers: the same bits as widening the
// rows first and running the f32 tile kernel, without the round trip through memory.
using HalfTileKernel = void (*)(const uint16_t* const* rows, bool bf16, int64_t n_rows, const float* x, int64_t xs,
                                int64_t n, int64_t in, float* y, int64_t ys, const void* next, int64_t next_bytes);
// dst[i] = the f32 value of src[i] (IEEE binary16 when !bf16, else bfloat16), exact.
using WidenKernel = void (*)(const uint16_t* src, float* dst, int64_t n, bool bf16);

struct Kernels {
  TileKernel tile;
  WidenKernel widen;
  HalfTileKernel tile_half;  // null when only widen + tile exist
  const char* name;  // "portable" or "avx2+fma"
};

// The fastest kernels this CPU runs, or the portable ones when allow_simd is false.
Kernels select_kernels(bool allow_simd);

void tile_portable(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                   float* y, int64_t ys, const void* next, int64_t next_bytes);
void widen_portable(const uint16_t* src, float* dst, int64_t n, bool bf16);

#if defined(__x86_64__) && defined(__GNUC__)
#ifndef LOOM_NONE_HAVE_AVX2
#define LOOM_NONE_HAVE_AVX2 1
#endif
bool cpu_has_avx2_fma_f16c();  // defined in none_panel_avx2.cpp
void tile_avx2(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
               float* y, int64_t ys, const void* next, int64_t next_bytes);
void tile_half_avx2(const uint16_t* const* rows, bool bf16, int64_t n_rows, const float* x, int64_t xs, int64_t n,
                    int64_t in, float* y, int64_t ys, const void* next, int64_t next_bytes);
void widen_f16c(const uint16_t* src, float* dst, int64_t n, bool bf16);
#endif

// The lane tree shared by every kernel, so all of them finish a dot product alike.
inline float lane_sum(const float* a) { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); }

}  // namespace loom_none
