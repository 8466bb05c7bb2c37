// Column panels of a weight and the GEMM on them (BLIS-style outer products).
//
// Layout: W [out, in] is cut into panels of kPanel output features; panel p is stored k-major,
// panel[k][j] = W[p * kPanel + j][k] (j < kPanel, the last panel zero-padded), in the weight's
// own element type (f32, f16 or bf16: the same bytes as the file, reordered). The panels lie one
// after another: [n_panels][in][kPanel].
//
// Batch invariance: every output element is ONE chain of multiply-adds in strictly increasing k,
// acc = acc + x[t][k] * w[o][k] from acc = 0, k = 0 .. in-1, whatever n is, however rows,
// panels and k are blocked and whichever thread runs it. Blocking k only stores the chain's
// partial value in y and reloads it, which changes no bit. The AVX2 kernel fuses each
// multiply-add, the portable one rounds both (-ffp-contract=off): they differ from each other,
// never within themselves.
#pragma once

#include <cstdint>

#include "loom/quantization.h"

namespace loom_none {

constexpr int64_t kPanel = 16;  // output features per panel: two 8-float vectors

// A prepared weight in panels. Owns nothing.
struct PanelView {
  loom_dtype dtype;  // F32, F16 or BF16: the element type of `data`
  int64_t out, in;
  int64_t n_panels;  // ceil(out / kPanel)
  const void* data;  // [n_panels][in][kPanel]
};

inline int64_t element_bytes(loom_dtype t) { return t == LOOM_DTYPE_F32 ? 4 : 2; }

// Decode kernels: each weight panel stream asks for the line kStreamAhead bytes past the one it
// reads. Decode reads every weight once with little arithmetic per byte, and the hardware
// prefetchers do not run far enough ahead of several streams from a distant last-level cache or
// DRAM. loom-bench model, SmolLM2-135M f16, 2 threads, 2-core AVX-512 VM with a 480 MiB L3, ms
// per step at 1 / 5 / 8 rows: 11.2 / 15.0 / 22.7 without, 10.0 / 13.4 / 17.5 with (AVX-512);
// the AVX2 kernel at 1 / 2 / 4 rows: 11.4 / 13.6 / 23.5 without, 10.2 / 11.6 / 15.9 with. The
// address is formed as an integer: past a panel's end it may lie outside the weight (a prefetch
// never faults).
constexpr uintptr_t kStreamAhead = 2048;
inline __attribute__((always_inline)) void stream_prefetch(const void* p) {
  __builtin_prefetch(reinterpret_cast<const char*>(reinterpret_cast<uintptr_t>(p) + kStreamAhead), 0, 3);
}
inline int64_t panel_bytes(const PanelView& w) { return w.in * kPanel * element_bytes(w.dtype); }

// Rows of x packed at a time by the prefill kernel (kBlockRows x block_k floats of scratch: up to
// 288 KiB, in L2) and the k block the weight panels are walked in: block_k x kPanel elements,
// 16 KiB, so a panel's block stays in L1 while every packed row group passes.
constexpr int64_t kBlockRows = 144;
constexpr int64_t kBlockBytes = 16384;
inline int64_t block_k(loom_dtype t) { return kBlockBytes / (kPanel * element_bytes(t)); }

// Floats of per-thread scratch panel_gemm needs for n rows of `in` features: packed x (decode
// packs all of x, unblocked in k), plus 8 floats the packing may write past its end.
inline int64_t scratch_floats(int64_t n, int64_t in) {
  const int64_t decode = n * in;
  const int64_t prefill = kBlockRows * kBlockBytes / (kPanel * 2);
  return (decode > prefill ? decode : prefill) + 8;
}

// y[t * ys + o] = sum_k x[t * xs + k] * W[o][k] for t < n and the features of panels
// [p_begin, p_end) (those below w.out). scratch: scratch_floats(n, w.in) floats.
using PanelGemm = void (*)(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs,
                           int64_t n, float* y, int64_t ys, float* scratch);

// Reorders W [out, in] (row stride row_stride elements, element type w.dtype) into w's panels at
// dst (panel_bytes(w) * w.n_panels bytes), panels [p_begin, p_end) of them (disjoint ranges may be
// packed by different threads): a plain byte shuffle, no rounding.
void pack_panels(const void* src, int64_t row_stride, const PanelView& w, void* dst, int64_t p_begin,
                 int64_t p_end);

void panel_gemm_portable(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs,
                         int64_t n, float* y, int64_t ys, float* scratch);

#if defined(__x86_64__) && defined(__GNUC__)
#ifndef LOOM_NONE_HAVE_AVX2
#define LOOM_NONE_HAVE_AVX2 1
#endif
bool cpu_has_avx2_fma_f16c();
void panel_gemm_avx2(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                     float* y, int64_t ys, float* scratch);
void pack_x_avx2(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp);
void packed_gemm_avx2(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                      float* y, int64_t ys);
// AVX-512F tiles on the same packed x (none_panel_avx512.cpp): the AVX2 kernel's bits.
bool cpu_has_avx512f();
void packed_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                        float* y, int64_t ys);
// AVX-512F decode (none_decode_avx512.cpp): up to kDecodeRowsAvx512 rows, the AVX2 kernels' bits;
// panel_gemm_avx512 hands more rows to panel_gemm_avx2.
constexpr int64_t kDecodeRowsAvx512 = 8;
void decode_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                        float* y, int64_t ys);
void panel_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                       float* y, int64_t ys, float* scratch);
namespace emulated {  // the AVX-512 files compiled against SIMDe, for tests on CPUs without AVX-512
void packed_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                        float* y, int64_t ys);
void decode_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                        float* y, int64_t ys);
}
#endif

// Prefill with ONE packed copy of x for all threads (instead of one per thread), in two phases
// whose work items any free thread takes: first the blocks of x are packed (kBlockRows rows x
// block_k() features each), then (row block, panel range) items each run all k blocks. A static
// split of the panels made the faster thread wait for the slower one at every GEMM; the results
// are the bits of PanelGemm (same tiles, same chains).
// Block (m, kb) of the packed x starts at packed_x_offset(); its kBlockRows rows lie in groups of
// the micro-kernel's rows, [kn][rows] each, and its packing may write 8 floats past its end.
inline int64_t packed_x_blocks(int64_t n, int64_t in, loom_dtype t) {
  return (n + kBlockRows - 1) / kBlockRows * ((in + block_k(t) - 1) / block_k(t));
}
inline int64_t packed_x_floats(int64_t n, int64_t in, loom_dtype t) {
  return n * in + 8 * packed_x_blocks(n, in, t) + 8;
}
inline int64_t packed_x_offset(int64_t n, int64_t in, loom_dtype t, int64_t m, int64_t kb) {
  const int64_t m0 = m * kBlockRows, k0 = kb * block_k(t);
  const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
  const int64_t k_blocks = (in + block_k(t) - 1) / block_k(t);
  return m0 * in + k0 * mn + 8 * (m * k_blocks + kb);  // 8 floats of slack after every block
}
// Packs block `block` (= m * k_blocks + kb) of x [n, w.in] into xp (packed_x_floats() floats).
using PackX = void (*)(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp);
// y rows of row block m, features of panels [p_begin, p_end), from the packed x.
using PackedGemm = void (*)(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n,
                            int64_t m, float* y, int64_t ys);
// Rows from which linear takes the shared-prefill path (below: the decode kernels, per thread).
constexpr int64_t kPrefillRows = 6;

struct PanelKernels {
  PanelGemm gemm;
  const char* name;  // "portable", "avx2+fma" or "avx512f" (prefill tiles and decode)
  PackX pack_x = nullptr;  // the shared prefill, where the kernel has one (null: gemm for every n)
  PackedGemm packed_gemm = nullptr;
  int64_t prefill_rows = kPrefillRows;  // from this many rows on, the shared prefill (with threads)
};

// The fastest kernel this CPU runs (no AVX-512 one unless allow_avx512), or the portable one when
// allow_simd is false.
PanelKernels select_panel_kernels(bool allow_simd, bool allow_avx512);

}  // namespace loom_none
