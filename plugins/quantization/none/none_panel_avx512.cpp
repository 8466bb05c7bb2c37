// AVX-512F prefill GEMM on weight panels (none_panel.hpp): the shared-x path's packed_gemm with
// one zmm per 16-feature panel, called only after cpu_has_avx512f(). The packed x blocks are
// the AVX2 pack_x's (groups of 6 rows, [kn][6] each), so only the tiles change.
//
// Micro-kernel: up to 4 groups of 6 rows (24 zmm accumulators) by one panel; each k step widens
// one 16-weight row of the panel (f16/bf16/f32) and issues one FMA per row, its x value
// broadcast from memory. The panel's block_k() x 16 weights (16 KiB) stay in L1 while the row
// groups pass, as in the AVX2 kernel. The short last group (1-5 rows) takes 4-8 panels at once.
//
// Same bits as the AVX2 kernel: every output element is the same single chain of fused
// multiply-adds in increasing k from 0 (partial chains stored in y between k blocks), only more
// lanes side by side. tests/conformance checks that on CPUs with AVX-512F, and
// tests/conformance/conformance_simd_isa.cpp on any AVX2 CPU by compiling this file against
// SIMDe's emulation (LOOM_SIMD_EMULATE: the entry point moves to namespace loom_none::emulated).
#include <cstdint>

#include "none_panel.hpp"
#include "none_row_tiles.hpp"

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

namespace loom_none {
#ifndef LOOM_SIMD_EMULATE
bool cpu_has_avx512f() { return cpu_has_avx2_fma_f16c() && __builtin_cpu_supports("avx512f"); }
#endif
}  // namespace loom_none

namespace LOOM_AVX512_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f")
#endif

namespace {

using loom_none::block_k;
using loom_none::kBlockRows;
using loom_none::kPanel;
using loom_none::packed_x_offset;
using loom_none::PanelView;

constexpr int kGroup = loom_none::kTileGroup;  // rows per packed x group (the AVX2 pack_x layout)
static_assert(kGroup == 6, "the AVX2 pack_x packs x in groups of 6 rows");

#include "none_load_avx512.hpp"

// c[(g * GR + r) * ldc + 16 q + j] (g < NG groups of GR rows, q < P panels ps elements apart,
// j < 16) continues its chain over kn steps of k: c = fma(x, w, c) with
// x = xp[g * GR * kn + k * GR + r] and w = w[q * ps + k * 16 + j]. `first` starts every chain
// at 0 instead of reading c. kStream: the tile that reads the panels' block from memory (the
// first of the row block) asks for the line kStreamAhead bytes ahead of each it reads, as the
// decode kernels do: at 12-16 rows the hardware prefetchers left the step waiting on the weights
// (loom-bench model, llama-125m f16, 2 threads, Zen 4, ms per batched step at 12 / 16 / 24 rows:
// 24.7 / 32.8 / 42.7 without, 18.0 / 23.9 / 38.6 with, one round; 27.2 / 30.2 / 44.9 and
// 19.5 / 26.4 / 39.5 in a second).
//
// S > 0 (P = 1 only): the tile also carries the row block's short last group, S rows packed
// [kn][S] at xs, whose outputs are rows NG * GR .. NG * GR + S - 1 of c. The tile is then the
// block's last, so those rows follow its own in y. On its own a short group of 1-2 rows reads the
// panels again for 1-2 chains each (for_each_short_group_tile); here it rides on the loads the
// tile makes anyway.
template <class Load, int NG, int GR, int P, bool kStream = false, int S = 0>
inline __attribute__((always_inline)) void micro(const typename Load::T* w, int64_t ps, const float* xp, int64_t kn,
                                                 float* c, int64_t ldc, bool first, const float* xs = nullptr) {
  static_assert(S == 0 || P == 1);
  constexpr int R = NG * GR + S;
  constexpr int64_t kPerLine = 64 / (kPanel * static_cast<int64_t>(sizeof(typename Load::T)));
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) acc[r][q] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + q * kPanel);
  for (int64_t k = 0; k < kn; ++k) {
    if (kStream && k % kPerLine == 0)
      for (int q = 0; q < P; ++q) loom_none::stream_prefetch(w + q * ps + k * kPanel);
    __m512 wv[P];
    for (int q = 0; q < P; ++q) wv[q] = Load::vec(w + q * ps + k * kPanel);
    for (int g = 0; g < NG; ++g)
      for (int r = 0; r < GR; ++r) {
        const __m512 xb = _mm512_set1_ps(xp[g * GR * kn + k * GR + r]);
        for (int q = 0; q < P; ++q) acc[g * GR + r][q] = _mm512_fmadd_ps(xb, wv[q], acc[g * GR + r][q]);
      }
    for (int r = 0; r < S; ++r) {
      const __m512 xb = _mm512_set1_ps(xs[k * S + r]);
      acc[NG * GR + r][0] = _mm512_fmadd_ps(xb, wv[0], acc[NG * GR + r][0]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int q = 0; q < P; ++q) _mm512_storeu_ps(c + r * ldc + q * kPanel, acc[r][q]);
}

// Rows [0, mn) of one row block over one k block [k0, k0 + kn), panels [p_begin, p_end): xp is
// the block as pack_x left it, y its first row. k0 == 0 starts the chains. The whole groups go
// panel by panel; a short last group of 1-2 rows rides with the last tile of whole groups when
// that tile has room (micro's S), else it goes several panels at a time (none_row_tiles.hpp).
template <class Load>
void row_block(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t mn, int64_t k0,
               int64_t kn, float* y, int64_t ys) {
  using T = typename Load::T;
  const T* wd = static_cast<const T*>(w.data);
  const int64_t ps = w.in * kPanel;
  const bool first = k0 == 0;
  const auto cols_at = [&](int64_t p) { return w.out - p * kPanel < kPanel ? w.out - p * kPanel : kPanel; };
  const int64_t whole = mn / kGroup * kGroup;
  const float* xs = xp + whole * kn;
  // A short group of 1-2 rows joins the last whole tile when that tile has 1-3 groups; otherwise
  // it goes on its own, several panels at a time. Batched steps of llama-125m f16 (2 threads,
  // Zen 4, 4 alternating rounds, medians, ms): 19 rows 27.6 -> 25.7, 20 rows 29.1 -> 27.2 joined;
  // with 3-5 rows joined, 21 was level (29.1 / 28.7), 22 and 23 slower (29.6 -> 30.3, 30.2 -> 31.5):
  // there the short group's own tile (4 panels) already has chains enough.
  const int64_t short_rows = mn - whole;
  const bool joins = short_rows > 0 && short_rows <= 2 && whole % (4 * kGroup) != 0;
  for (int64_t p = p_begin; p < p_end; ++p) {
    const T* wp = wd + p * ps + k0 * kPanel;
    float* yp = y + p * kPanel;
    loom_none::for_each_row_tile<4>(whole, [&]<int NG, int GR>(int64_t b0) {
      // b0 == 0: the tile that reads the panel's block from memory.
      const auto run = [&]<int S>(float* c, int64_t ldc) {
        if (b0 == 0)
          micro<Load, NG, GR, 1, true, S>(wp, ps, xp + b0 * kn, kn, c, ldc, first, xs);
        else
          micro<Load, NG, GR, 1, false, S>(wp, ps, xp + b0 * kn, kn, c, ldc, first, xs);
      };
      const auto with_short = [&]<int S>() {
        loom_none::on_panel_columns<NG * GR + S>(yp + b0 * ys, ys, cols_at(p), first, [&](float* c, int64_t ldc) {
          run.template operator()<S>(c, ldc);
        });
      };
      if constexpr (NG < 4) {
        if (joins && b0 + NG * GR == whole) {
          if (short_rows == 1)
            with_short.template operator()<1>();
          else
            with_short.template operator()<2>();
          return;
        }
      }
      with_short.template operator()<0>();
    });
  }
  if (joins) return;
  float* ys0 = y + whole * ys;
  loom_none::for_each_short_group_tile<8, 6, 4, 4, 4>(mn - whole, p_begin, p_end, w.out / kPanel, [&]<int R, int P>(int64_t p) {
    const T* wp = wd + p * ps + k0 * kPanel;
    // With no whole group (a row block of 1-5 rows) this tile is the one that reads from memory.
    const auto run = [&](float* c, int64_t ldc) {
      if (whole == 0)
        micro<Load, 1, R, P, true>(wp, ps, xs, kn, c, ldc, first);
      else
        micro<Load, 1, R, P>(wp, ps, xs, kn, c, ldc, first);
    };
    if constexpr (P == 1)
      loom_none::on_panel_columns<R>(ys0 + p * kPanel, ys, cols_at(p), first, run);
    else
      run(ys0 + p * kPanel, ys);
  });
}

#include "none_packed_gemm.hpp"

}  // namespace

void packed_gemm_avx512(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                        float* y, int64_t ys) {
  packed_gemm_of_dtype(w, p_begin, p_end, xp, n, m, y, ys);
}

#pragma GCC pop_options

}  // namespace LOOM_AVX512_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
