// The dot-product kernels of quantization/gguf: y = x W^T over one tile of weight rows stored in
// a GGUF block format, on activations already quantized per row (Q8_0 blocks against Q8_0/Q4_0
// weights, Q8_K blocks against Q2_K..Q6_K and IQ4_XS). Each has a portable version and, on
// x86-64, an AVX2 one picked at run time (and for the K-quants an AVX-512 one).
//
// Batch invariance: a block's integer dot product is exact, and each kernel folds the blocks of
// one (activation row, weight row) pair into its float sum in one fixed order whatever n is and
// however rows are grouped into register blocks, so a row gives the same bits alone or in any
// batch. Portable and AVX2 kernels differ from each other, never within themselves.
#pragma once

#include <cstdint>

#include "gguf_repack.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {

// y[t * ys + j] = dot(activation row t, weight row j) for t < n, j < n_rows.
//   w: n_rows weight rows, w_row_bytes apart, each in/block_values blocks of the weight format
//   xq: n quantized activation rows, xq_row_bytes apart
using TileKernel = void (*)(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq,
                            int64_t xq_row_bytes, int64_t n, int64_t in, float* y, int64_t ys);

// xq = Q8_0 blocks of x: [n_blocks * 32] floats to n_blocks blocks. Every version gives the
// bits of loom::sdk::gguf::quantize_q8_0, so the two kernel sets see the same activations.
using QuantizeQ8_0 = void (*)(const float* x, loom::sdk::gguf::BlockQ8_0* y, int64_t n_blocks);

// The K-quant weights (Q2_K..Q6_K, IQ4_XS) x Q8_K activations (gguf_kernels_kquant_*.cpp).
struct KQuantKernels {
  TileKernel q2_k;
  TileKernel q3_k;
  TileKernel q4_k;
  TileKernel q5_k;
  TileKernel q6_k;
  TileKernel iq4_xs;
};

// The plugin takes AVX2 Q8_0/Q4_0 weights in the x8 layout (avx2_q*_0_x8_kernel below); the AVX2
// set's file-layout q8_0/q4_0 stay as gguf-kernel-bench's baseline.
struct Kernels {
  TileKernel q8_0;  // Q8_0 weights x Q8_0 activations
  TileKernel q4_0;  // Q4_0 weights x Q8_0 activations
  QuantizeQ8_0 quantize_q8_0;  // activations for q8_0 and q4_0
  const char* name;  // "portable" or "avx2"
  KQuantKernels kquant;
};

// The fastest kernels this CPU runs, or the portable ones when allow_simd is false.
Kernels select_kernels(bool allow_simd);

Kernels portable_kernels();
KQuantKernels portable_kquant_kernels();

#if defined(__x86_64__) && defined(__GNUC__)
#define LOOM_GGUF_HAVE_AVX2 1
bool cpu_has_avx2_fma();
Kernels avx2_kernels();
KQuantKernels avx2_kquant_kernels();
// Q4_0 and Q8_0 in the x8 layout (gguf_repack.hpp); AVX2 only, the portable set reads the file
// layout.
PackedKernel avx2_q4_0_x8_kernel();
PackedKernel avx2_q8_0_x8_kernel();
// The same on AVX512-VNNI (+VL) CPUs (gguf_kernels_vnni_x8.cpp): the AVX2 kernels' bits.
bool cpu_has_avx512_vnni();
PackedKernel vnni_q4_0_x8_kernel();
PackedKernel vnni_q8_0_x8_kernel();
// The K-quant kernels on AVX512-BW + VNNI (+VL) CPUs (gguf_kernels_kquant_avx512.cpp): the
// portable and AVX2 kernels' bits.
bool cpu_has_avx512_kquant();
KQuantKernels avx512_kquant_kernels();
namespace emulated {  // gguf_kernels_vnni_x8.cpp compiled against SIMDe, for tests on CPUs without VNNI
PackedKernel vnni_q4_0_x8_kernel();
PackedKernel vnni_q8_0_x8_kernel();
KQuantKernels avx512_kquant_kernels();  // gguf_kernels_kquant_avx512.cpp, likewise
}
#endif

}  // namespace loom_gguf
