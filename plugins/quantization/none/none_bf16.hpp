// The opt-in bf16 compute mode of quantization/none (config compute = "bf16"): weights rounded to
// bfloat16 at load, activations rounded to bfloat16 per linear, products summed in f32 by
// AVX512-BF16's vdpbf16ps, which multiplies two bf16 pairs per f32 lane: twice the
// multiply-adds per instruction of the exact path's f32 FMA.
//
// Layout ("pair panels"): W [out, in] is cut into panels of kPanel output features as in
// none_panel.hpp, but each panel is stored as [kp][kPanel] 32-bit pairs, kp = ceil(in / 2):
// pair (kp, j) holds bf16(W[p * kPanel + j][2 kp]) in its low half and bf16(W[..][2 kp + 1]) in
// its high half (zero past in or out): the operand vdpbf16ps takes. Same bytes as an f16 panel.
// The activations are packed the same way, x pair (t, kp) = bf16(x[t][2 kp]) | bf16(x[t][2 kp + 1]) << 16,
// into the exact path's scratch and packed-x buffers (none_panel.hpp offsets, in floats: a pair is
// one float's width, so half of each block is used).
//
// Batch invariance: every output element is one chain of vdpbf16ps steps over kp = 0 .. kp-1
// from 0, whatever the row count, blocking, path (decode or shared prefill) or thread, so
// batched == alone bit for bit within this mode. It is not the exact path's bits, and it is not
// bound to the portable reference's bits either (the instruction's internal rounding order is the
// CPU's): tests hold it to the reference within bf16's error.
#pragma once

#include <cstdint>

#include "none_panel.hpp"

namespace loom_none {

// Pairs per row of a weight of `in` features. The shared prefill walks k in the exact path's bf16
// blocks (block_k: 512 k = 256 pairs of 16 lanes, 16 KiB), even, so no block splits a pair.
inline int64_t pairs_of(int64_t in) { return (in + 1) / 2; }

// bf16(v) rounded to nearest even, NaN kept quiet (loom::sdk::f32_to_bf16's bits).
uint32_t bf16_pair(float lo, float hi);

// Reorders W [out, in] (element type src_dtype: f32, f16 or bf16; row stride row_stride
// elements) into pair panels [p_begin, p_end) of w (w.dtype must be LOOM_DTYPE_BF16, its
// n_panels * in_pairs * kPanel pairs at dst), rounding each element to bf16.
void pack_pair_panels(const void* src, loom_dtype src_dtype, int64_t row_stride, const PanelView& w, uint32_t* dst,
                      int64_t p_begin, int64_t p_end);

// The reference: y = x W^T with x and W rounded to bf16 and each pair's two exact products added
// to the f32 chain in turn (low element first), plain C++. Rows t < n, panels [p_begin, p_end).
void pair_gemm_reference(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                         float* y, int64_t ys);

#if defined(__x86_64__) && defined(__GNUC__)
bool cpu_has_avx512_bf16();
// PanelKernels of the mode (AVX512-BF16): gemm (decode: packs its rows into scratch), pack_x and
// packed_gemm (the shared prefill) on pair panels.
PanelKernels select_bf16_kernels();
void pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                          float* y, int64_t ys, float* scratch);
void pack_x_pairs_avx512bf16(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp);
void packed_pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n,
                                 int64_t m, float* y, int64_t ys);
namespace emulated {  // the same file compiled against SIMDe, for tests on CPUs without AVX512-BF16
void pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                          float* y, int64_t ys, float* scratch);
void pack_x_pairs_avx512bf16(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp);
void packed_pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n,
                                 int64_t m, float* y, int64_t ys);
}  // namespace emulated
#endif

}  // namespace loom_none
