// AVX-512F decode GEMM on weight panels (none_panel.hpp): 1 to kDecodeRowsAvx512 rows of x, a
// step's decode tokens or a speculative verification's k + 1, called only after
// cpu_has_avx512f(). More rows go to the AVX2 panel_gemm (whose prefill tiles the shared-x path
// replaces with AVX-512 ones).
//
// Why: at 2-8 rows the AVX2 decode kernel is bound by its FMAs, not by the weights it reads
// (576 x 49152 f16 at 5 rows: 2.4x the time of 1 row, measured), so verifying k drafts cost
// nearly k + 1 decode steps. One zmm per 16-feature panel doubles the FMA width, and P panels
// at once (P chosen for the row count so R x P accumulators fit the 32 registers) keep enough
// independent chains in flight and enough weight streams open to run at memory bandwidth.
//
// Micro-kernel: R rows by P panels; each k step widens P panel rows (f16/bf16/f32), broadcasts R
// x values straight from the rows of x (no packing: they stay in L1/L2) and issues R x P FMAs.
// Each panel stream prefetches kStreamAhead bytes ahead (none_panel.hpp).
//
// Same bits as the AVX2 kernels: every output element is the single chain of fused
// multiply-adds acc = fma(x[t][k], w[o][k], acc) in increasing k from acc = 0, as the AVX2 decode,
// row-block and packed prefill kernels compute it; only more lanes run side by side.
// tests/conformance/conformance_simd_isa.cpp checks that, natively where the CPU has AVX-512F
// and on any AVX2 CPU through SIMDe (LOOM_SIMD_EMULATE: the entry point moves to
// loom_none::emulated).
#include <cstdint>

#include "none_panel.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_AVX512_NAMESPACE loom_none::emulated
#else
#include <immintrin.h>
#define LOOM_AVX512_NAMESPACE loom_none
// GCC 12 reports _mm512_cvtph_ps's _mm512_undefined_ps() pass-through as maybe-uninitialized
// (a false positive inside the intrinsic's header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace LOOM_AVX512_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f")
#endif

namespace {

using loom_none::kPanel;
using loom_none::PanelView;

#include "none_load_avx512.hpp"

// c[r * ldc + 16 p + j] (r < R, p < P, j < 16) = the chain over all k of x[r * xs + k] times
// panel p's weight j, panels ps elements apart.
template <class Load, int R, int P>
inline __attribute__((always_inline)) void micro(const typename Load::T* w, int64_t ps, const float* x, int64_t xs,
                                                 int64_t in, float* c, int64_t ldc) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  using T = typename Load::T;
  // k steps per 64-byte line of a panel: 2 for f16/bf16, 1 for f32.
  constexpr int64_t kPerLine = 64 / (kPanel * static_cast<int64_t>(sizeof(T)));
  for (int64_t k = 0; k < in; ++k) {
    if (k % kPerLine == 0)
      for (int p = 0; p < P; ++p) loom_none::stream_prefetch(w + p * ps + k * kPanel);
    __m512 wv[P];
    for (int p = 0; p < P; ++p) wv[p] = Load::vec(w + p * ps + k * kPanel);
    for (int r = 0; r < R; ++r) {
      const __m512 xb = _mm512_set1_ps(x[r * xs + k]);
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_fmadd_ps(xb, wv[p], acc[r][p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(c + r * ldc + p * kPanel, acc[r][p]);
}

// One panel whose first `cols` features are valid (a weight's last, partial panel): computed
// into a local tile, the valid columns copied out.
template <class Load, int R>
void partial_panel(const typename Load::T* w, int64_t ps, const float* x, int64_t xs, int64_t in, float* y,
                   int64_t ys, int64_t cols) {
  alignas(64) float c[R * kPanel];
  micro<Load, R, 1>(w, ps, x, xs, in, c, kPanel);
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r * ys + j] = c[r * kPanel + j];
}

// Panels [p_begin, p_end) for R rows: P at a time, the rest (and a partial last panel) one by one.
template <class Load, int R, int P>
void decode(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, float* y, int64_t ys) {
  using T = typename Load::T;
  const T* wd = static_cast<const T*>(w.data);
  const int64_t ps = w.in * kPanel;
  const int64_t full = w.out / kPanel;  // panels whose 16 features all exist
  const int64_t end_full = p_end < full ? p_end : full;
  int64_t p = p_begin;
  for (; p + P <= end_full; p += P) micro<Load, R, P>(wd + p * ps, ps, x, xs, w.in, y + p * kPanel, ys);
  for (; p < end_full; ++p) micro<Load, R, 1>(wd + p * ps, ps, x, xs, w.in, y + p * kPanel, ys);
  if (p < p_end) partial_panel<Load, R>(wd + p * ps, ps, x, xs, w.in, y + p * kPanel, ys, w.out - p * kPanel);
}

// R x P: about 24 accumulators at most, leaving registers for P weight rows and a broadcast.
// One row takes 2 panels, not 8: two FMA chains still read 16 bytes a cycle (more than a core's
// share of memory), and 2 weight streams in flight where 8 were keep the DRAM reads sequential.
// llama-1b f16, one sequence, 2 threads, 2-core Zen 4 VM: 9.4-14.7 -> 12.4-16.8 tok/s, the two
// builds alternating over 7 rounds (each round faster with 2 panels).
template <class Load>
void gemm(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n, float* y,
          int64_t ys) {
  switch (n) {
    case 1: decode<Load, 1, 2>(w, p_begin, p_end, x, xs, y, ys); break;
    case 2: decode<Load, 2, 6>(w, p_begin, p_end, x, xs, y, ys); break;
    case 3: decode<Load, 3, 4>(w, p_begin, p_end, x, xs, y, ys); break;
    case 4: decode<Load, 4, 4>(w, p_begin, p_end, x, xs, y, ys); break;
    case 5: decode<Load, 5, 4>(w, p_begin, p_end, x, xs, y, ys); break;
    case 6: decode<Load, 6, 3>(w, p_begin, p_end, x, xs, y, ys); break;
    case 7: decode<Load, 7, 2>(w, p_begin, p_end, x, xs, y, ys); break;
    default: decode<Load, 8, 2>(w, p_begin, p_end, x, xs, y, ys); break;
  }
}

// The kernel for w's element type.
void decode_any(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n, float* y,
                int64_t ys) {
  switch (w.dtype) {
    case LOOM_DTYPE_F16: gemm<LoadF16>(w, p_begin, p_end, x, xs, n, y, ys); break;
    case LOOM_DTYPE_BF16: gemm<LoadBF16>(w, p_begin, p_end, x, xs, n, y, ys); break;
    default: gemm<LoadF32>(w, p_begin, p_end, x, xs, n, y, ys); break;
  }
}

}  // namespace

void decode_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                        float* y, int64_t ys) {
  decode_any(w, p_begin, p_end, x, xs, n, y, ys);
}

#ifndef LOOM_SIMD_EMULATE
// The PanelGemm entry: up to kDecodeRowsAvx512 rows here, more through the AVX2 kernel (same
// chains, so the same bits either way).
void panel_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                       float* y, int64_t ys, float* scratch) {
  if (n <= loom_none::kDecodeRowsAvx512) {
    decode_any(w, p_begin, p_end, x, xs, n, y, ys);
    return;
  }
  loom_none::panel_gemm_avx2(w, p_begin, p_end, x, xs, n, y, ys, scratch);
}
#endif

#pragma GCC pop_options

}  // namespace LOOM_AVX512_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
