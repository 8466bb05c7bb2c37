// AVX512-BF16 kernels of the bf16 compute mode (none_bf16.hpp), called only after
// cpu_has_avx512_bf16(): the decode GEMM (rows packed per thread into its scratch) and the shared
// prefill's pack_x / packed_gemm, all on pair panels.
//
// Why: the exact path's f16 GEMM runs at the f32 FMA limit from about 8 rows on (two cores,
// ~90% of it in prefill); vdpbf16ps does two multiply-adds per f32 lane and instruction.
//
// Micro-kernels: prefill, up to 2 groups of 6 rows by two panels (24 zmm accumulators), two
// 64-byte panel rows of 16 pairs loaded per pair step and each row's x pair broadcast once for
// two vdpbf16ps; the panels' 256-pair blocks (32 KiB) are re-read from L1/L2 as the row groups
// pass. A weight's odd or partial last panel takes one-panel tiles of up to 24 rows. Decode, R rows by P panels (R x P <= 24), the panel
// streams prefetched kStreamAhead ahead as the exact decode kernels do.
//
// Activations are rounded to bf16 by integer arithmetic that gives loom::sdk::f32_to_bf16's bits
// (round to nearest even, NaN kept quiet), in both paths, so decode and prefill compute the same
// chains from the same operands. tests/conformance/conformance_simd_isa.cpp checks the kernels
// natively where the CPU has AVX512-BF16 and elsewhere through SIMDe (LOOM_SIMD_EMULATE: the
// entry points move to loom_none::emulated).
#include <cstdint>
#include <cstring>

#include "none_bf16.hpp"
#include "none_row_tiles.hpp"

#ifdef LOOM_NONE_HAVE_AVX2

#ifdef LOOM_SIMD_EMULATE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#define LOOM_BF16_NAMESPACE loom_none::emulated
#else
#include <immintrin.h>
#define LOOM_BF16_NAMESPACE loom_none
// GCC 12 reports the _mm512_undefined_*() pass-through of _mm512_set1_epi32 and friends as
// maybe-uninitialized (a false positive inside the intrinsics' header).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace loom_none {
#ifndef LOOM_SIMD_EMULATE
bool cpu_has_avx512_bf16() {
  return cpu_has_avx512f() && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512bf16");
}
#endif
}  // namespace loom_none

namespace LOOM_BF16_NAMESPACE {

#pragma GCC push_options
#ifdef LOOM_SIMD_EMULATE
#pragma GCC target("avx2,fma,f16c")
#else
#pragma GCC target("avx2,fma,f16c,avx512f,avx512bw,avx512bf16")
#endif

namespace {

using loom_none::kBlockRows;
using loom_none::kPanel;
using loom_none::pairs_of;
using loom_none::PanelView;

constexpr int kGroup = loom_none::kTileGroup;  // rows per packed x group

inline __attribute__((always_inline)) __m512bh as_bh(__m512i v) {
  __m512bh r;
  std::memcpy(&r, &v, sizeof r);
  return r;
}

// loom::sdk::f32_to_bf16 on 16 lanes: bf16 bits in each lane's low half.
inline __m512i bf16_bits(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  const __m512i rounded = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(_mm512_set1_epi32(0x7fff), lsb)), 16);
  // Both sides are non-negative as int32, so the signed compare is the unsigned one.
  const __mmask16 nan = _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, _mm512_set1_epi32(0x7fffffff)),
                                                _mm512_set1_epi32(0x7f800000));
  return _mm512_mask_mov_epi32(rounded, nan, _mm512_or_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(0x40)));
}

// Row r of a group of `gr` rows: pairs k0/2 .. of x[k0 .. k0 + kn) (k0 even; an odd kn's last
// pair gets a zero high half) into dst[kp * gr + r].
void pack_row(const float* x, int64_t k0, int64_t kn, int64_t gr, int64_t r, uint32_t* dst) {
  const float* xr = x + k0;
  int64_t k = 0;
  alignas(64) uint64_t pairs[8];
  for (; k + 16 <= kn; k += 16) {
    // Lane 2i holds bf16(x[k + 2i]) and lane 2i + 1 bf16(x[k + 2i + 1]), each in its low half:
    // as 64-bit lanes, OR-ing in the lane shifted right by 16 puts the pair in the low 32 bits.
    const __m512i b = bf16_bits(_mm512_loadu_ps(xr + k));
    _mm512_store_si512(pairs, _mm512_or_si512(b, _mm512_srli_epi64(b, 16)));
    for (int i = 0; i < 8; ++i) dst[(k / 2 + i) * gr + r] = static_cast<uint32_t>(pairs[i]);
  }
  for (; k < kn; k += 2) {
    dst[(k / 2) * gr + r] = loom_none::bf16_pair(xr[k], k + 1 < kn ? xr[k + 1] : 0.0F);
  }
}

// mn rows of x (xs apart) over [k0, k0 + kn) into groups of kGroup rows, [kpn][rows] each
// (the last group has the leftover rows), kpn = ceil(kn / 2).
void pack_rows(const float* x, int64_t xs, int64_t mn, int64_t k0, int64_t kn, uint32_t* dst) {
  const int64_t kpn = (kn + 1) / 2;
  for (int64_t g0 = 0; g0 < mn; g0 += kGroup) {
    const int64_t gr = mn - g0 < kGroup ? mn - g0 : kGroup;
    for (int64_t r = 0; r < gr; ++r) pack_row(x + (g0 + r) * xs, k0, kn, gr, r, dst + g0 * kpn);
  }
}

// ---- shared prefill ----------------------------------------------------------------------

// c[(g * GR + r) * ldc + 16 p + j] (p < P panels, ps pairs apart) continues its chain over kpn
// pair steps: c = dpbf16(c, x pair, w pair) with the pair xp[g * GR * kpn + kp * GR + r] and
// w[p * ps + kp * 16 + j]. `first` starts at 0. kStream: the tile that reads two panels' block
// from memory (the first of the row block) asks for the line kStreamAhead bytes ahead of each it
// reads, as the exact path's prefill tile does: each pair step takes a 64-byte line of every
// panel, about 19 GB/s a core at this kernel's rate, more than the hardware prefetchers kept up
// with (the kernel on llama-125m's shapes, 1 thread, Zen 4, alternating builds, medians of 5:
// a weight read from memory 81.2 -> 87.1 GMAC/s, one in cache 92.1 -> 97.5). Only the two-panel
// tiles stream: with the one-panel and short-group tiles streaming too, GCC spilled a weight
// register of the two-panel loop to the stack.
template <int NG, int GR, int P, bool kStream = false>
inline __attribute__((always_inline)) void micro(const uint32_t* w, int64_t ps, const uint32_t* xp, int64_t kpn,
                                                 float* c, int64_t ldc, bool first) {
  constexpr int R = NG * GR;
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + p * kPanel);
  for (int64_t kp = 0; kp < kpn; ++kp) {
    __m512bh wv[P];
    for (int p = 0; p < P; ++p) {
      if (kStream) loom_none::stream_prefetch(w + p * ps + kp * kPanel);  // one 64-byte line per pair step
      wv[p] = as_bh(_mm512_loadu_si512(w + p * ps + kp * kPanel));
    }
    for (int g = 0; g < NG; ++g)
      for (int r = 0; r < GR; ++r) {
        const __m512bh xb = as_bh(_mm512_set1_epi32(static_cast<int>(xp[g * GR * kpn + kp * GR + r])));
        for (int p = 0; p < P; ++p) acc[g * GR + r][p] = _mm512_dpbf16_ps(acc[g * GR + r][p], xb, wv[p]);
      }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(c + r * ldc + p * kPanel, acc[r][p]);
}

// Rows [0, mn) of a row block over pairs [kp0, kp0 + kpn), panels [p_begin, p_end): the whole
// groups take whole panels two at a time in tiles of up to 12 rows (half the x broadcasts per
// vdpbf16ps of one panel by 24 rows: on Zen 4 the 24 x 1 tile ran about a fifth below the FMA
// kernel's instruction rate, 12 x 2 level with it) and a last odd or partial panel alone in
// tiles of up to 24 rows; the short last group takes 4-8 panels at once (none_row_tiles.hpp).
void row_block(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t mn, int64_t kp0,
               int64_t kpn, float* y, int64_t ys) {
  const auto* wd = static_cast<const uint32_t*>(w.data);
  const int64_t ps = pairs_of(w.in) * kPanel;
  const bool first = kp0 == 0;
  const int64_t full = w.out / kPanel;  // panels whose 16 features all exist
  const auto cols_at = [&](int64_t p) { return w.out - p * kPanel < kPanel ? w.out - p * kPanel : kPanel; };
  const int64_t whole = mn / kGroup * kGroup;
  int64_t p = p_begin;
  for (; p + 2 <= p_end && p + 2 <= full; p += 2) {
    const uint32_t* wp = wd + p * ps + kp0 * kPanel;
    float* yp = y + p * kPanel;
    loom_none::for_each_row_tile<2>(whole, [&]<int NG, int GR>(int64_t b0) {
      if (b0 == 0)
        micro<NG, GR, 2, true>(wp, ps, xp + b0 * kpn, kpn, yp + b0 * ys, ys, first);
      else
        micro<NG, GR, 2>(wp, ps, xp + b0 * kpn, kpn, yp + b0 * ys, ys, first);
    });
  }
  for (; p < p_end; ++p) {
    const uint32_t* wp = wd + p * ps + kp0 * kPanel;
    float* yp = y + p * kPanel;
    loom_none::for_each_row_tile<4>(whole, [&]<int NG, int GR>(int64_t b0) {
      loom_none::on_panel_columns<NG * GR>(yp + b0 * ys, ys, cols_at(p), first, [&](float* c, int64_t ldc) {
        micro<NG, GR, 1>(wp, ps, xp + b0 * kpn, kpn, c, ldc, first);
      });
    });
  }
  const uint32_t* xs = xp + whole * kpn;
  float* ys0 = y + whole * ys;
  loom_none::for_each_short_group_tile<8, 6, 4, 4, 4>(mn - whole, p_begin, p_end, full, [&]<int R, int P>(int64_t q) {
    const uint32_t* wp = wd + q * ps + kp0 * kPanel;
    if constexpr (P == 1)
      loom_none::on_panel_columns<R>(ys0 + q * kPanel, ys, cols_at(q), first, [&](float* c, int64_t ldc) {
        micro<1, R, 1>(wp, ps, xs, kpn, c, ldc, first);
      });
    else
      micro<1, R, P>(wp, ps, xs, kpn, ys0 + q * kPanel, ys, first);
  });
}

// ---- decode ------------------------------------------------------------------------------

// c[r * ldc + 16 p + j] (r < R, p < P) = the chain over all kpn pairs of row r's pairs
// xp[kp * R + r] and panel p's, panels ps pairs apart.
template <int R, int P>
inline __attribute__((always_inline)) void micro_decode(const uint32_t* w, int64_t ps, const uint32_t* xp,
                                                        int64_t kpn, float* c, int64_t ldc) {
  __m512 acc[R][P];
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) acc[r][p] = _mm512_setzero_ps();
  for (int64_t kp = 0; kp < kpn; ++kp) {
    __m512bh wv[P];
    for (int p = 0; p < P; ++p) {
      loom_none::stream_prefetch(w + p * ps + kp * kPanel);  // one 64-byte line per pair step
      wv[p] = as_bh(_mm512_loadu_si512(w + p * ps + kp * kPanel));
    }
    for (int r = 0; r < R; ++r) {
      const __m512bh xb = as_bh(_mm512_set1_epi32(static_cast<int>(xp[kp * R + r])));
      for (int p = 0; p < P; ++p) acc[r][p] = _mm512_dpbf16_ps(acc[r][p], xb, wv[p]);
    }
  }
  for (int r = 0; r < R; ++r)
    for (int p = 0; p < P; ++p) _mm512_storeu_ps(c + r * ldc + p * kPanel, acc[r][p]);
}

// Panels [p_begin, p_end) for R packed rows: P at a time, then one by one, a partial last panel
// through on_panel_columns.
template <int R, int P>
void decode(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, float* y, int64_t ys) {
  const auto* wd = static_cast<const uint32_t*>(w.data);
  const int64_t kpn = pairs_of(w.in);
  const int64_t ps = kpn * kPanel;
  const int64_t full = w.out / kPanel;
  const int64_t end_full = p_end < full ? p_end : full;
  int64_t p = p_begin;
  for (; p + P <= end_full; p += P) micro_decode<R, P>(wd + p * ps, ps, xp, kpn, y + p * kPanel, ys);
  for (; p < end_full; ++p) micro_decode<R, 1>(wd + p * ps, ps, xp, kpn, y + p * kPanel, ys);
  if (p < p_end)
    loom_none::on_panel_columns<R>(y + p * kPanel, ys, w.out - p * kPanel, true, [&](float* c, int64_t ldc) {
      micro_decode<R, 1>(wd + p * ps, ps, xp, kpn, c, ldc);
    });
}

constexpr int64_t kDecodeRows = 8;

void decode_rows(const PanelView& w, int64_t p_begin, int64_t p_end, const uint32_t* xp, int64_t n, float* y,
                 int64_t ys) {
  switch (n) {
    case 1: decode<1, 8>(w, p_begin, p_end, xp, y, ys); break;
    case 2: decode<2, 6>(w, p_begin, p_end, xp, y, ys); break;
    case 3: decode<3, 4>(w, p_begin, p_end, xp, y, ys); break;
    case 4: decode<4, 4>(w, p_begin, p_end, xp, y, ys); break;
    case 5: decode<5, 4>(w, p_begin, p_end, xp, y, ys); break;
    case 6: decode<6, 3>(w, p_begin, p_end, xp, y, ys); break;
    case 7: decode<7, 2>(w, p_begin, p_end, xp, y, ys); break;
    default: decode<8, 2>(w, p_begin, p_end, xp, y, ys); break;
  }
}

}  // namespace

void pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* x, int64_t xs, int64_t n,
                          float* y, int64_t ys, float* scratch) {
  auto* xp = reinterpret_cast<uint32_t*>(scratch);
  for (int64_t t0 = 0; t0 < n; t0 += kDecodeRows) {
    const int64_t rows = n - t0 < kDecodeRows ? n - t0 : kDecodeRows;
    for (int64_t r = 0; r < rows; ++r) pack_row(x + (t0 + r) * xs, 0, w.in, rows, r, xp);
    decode_rows(w, p_begin, p_end, xp, rows, y + t0 * ys, ys);
  }
}

void pack_x_pairs_avx512bf16(const PanelView& w, const float* x, int64_t xs, int64_t n, int64_t block, float* xp) {
  const int64_t kb = loom_none::block_k(w.dtype);
  const int64_t k_blocks = (w.in + kb - 1) / kb;
  const int64_t m = block / k_blocks, b = block % k_blocks;
  const int64_t m0 = m * kBlockRows, k0 = b * kb;
  const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
  const int64_t kn = w.in - k0 < kb ? w.in - k0 : kb;
  pack_rows(x + m0 * xs, xs, mn, k0, kn,
            reinterpret_cast<uint32_t*>(xp + loom_none::packed_x_offset(n, w.in, w.dtype, m, b)));
}

void packed_pair_gemm_avx512bf16(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n,
                                 int64_t m, float* y, int64_t ys) {
  const int64_t kb = loom_none::block_k(w.dtype);  // elements per k block, even: no pair is split
  const int64_t kp_n = pairs_of(w.in);
  const int64_t m0 = m * kBlockRows;
  const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
  for (int64_t k0 = 0, b = 0; k0 < w.in; k0 += kb, ++b) {
    const int64_t kp0 = k0 / 2;
    const int64_t kpn = kp_n - kp0 < kb / 2 ? kp_n - kp0 : kb / 2;
    row_block(w, p_begin, p_end,
              reinterpret_cast<const uint32_t*>(xp + loom_none::packed_x_offset(n, w.in, w.dtype, m, b)), mn, kp0,
              kpn, y + m0 * ys, ys);
  }
}

#ifndef LOOM_SIMD_EMULATE
loom_none::PanelKernels select_bf16_kernels() {
  return loom_none::PanelKernels{pair_gemm_avx512bf16, "avx512bf16", pack_x_pairs_avx512bf16,
                                 packed_pair_gemm_avx512bf16, kDecodeRows + 1};
}
#endif

#pragma GCC pop_options

}  // namespace LOOM_BF16_NAMESPACE

#endif  // LOOM_NONE_HAVE_AVX2
