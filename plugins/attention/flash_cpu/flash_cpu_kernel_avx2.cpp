// The AVX2+FMA+F16C tile kernel, written with intrinsics because decode attention is a stream of
// short dot products and exps that the auto-vectoriser handles poorly:
//   * every KV dtype is converted in registers where it is used — f16 by F16C, bf16 by a shift,
//     int8 by sign extension, fp8_e4m3 by a gather from its 256-entry table — so an encoded pool
//     is read straight from memory at its own width, with no f32 staging pass;
//   * int8 block-head scales and fp8 row (token, head) scales are applied once per score (K) and
//     once per weight (V), not per element; a block-head's fp8 row scales are widened from f16
//     once per block for all rows of the tile;
//   * softmax exps are evaluated 8 scores at a time (exp8 below) instead of by scalar expf;
//   * the next KV block of the head is prefetched while the current one is folded, because the
//     rows of one head are KVH * head_dim elements apart and a paged table jumps between blocks,
//     which the hardware prefetchers do not follow; the blocks two ahead are prefetched into L2
//     whole (all the item's heads), spread over the block-heads folded meanwhile, which a decode
//     row needs to keep memory's latency hidden (loom-bench-attention, 125m decode 8x1 @300,
//     bf16 KV, 2 threads: 8.3-10.4 -> 4.1-5.6 ms over two changes).
//   * rows are folded in groups of up to 6 (rows of one KV head with the same causal key count:
//     all of them, except in the block holding their own positions) that share every K and V
//     load, like a GEMM micro-kernel. Scores are dot products along head_dim, read from the K rows
//     as they lie in the pool: 8 lanes of partial sums per (row, key), up to 3 rows x 4 keys (one
//     row x 8 keys in a decode of one head) in registers, then a fixed tree over the lanes. An
//     earlier version transposed each block-head's keys and took scores as outer products; for a
//     decode row of one head that transpose and one 64-long FMA chain per key set cost 2-3x the
//     arithmetic (loom-bench-attention, 125m decode 8x1 @300: 10.4 -> 6.9 ms; prefill 1x512
//     with f16 KV also faster, 21.1 -> 17.9 ms, with the F16C writer below);
//   * the plugin writes an f16 pool through encode_f16_avx2 (F16C, 8 values a time) and a bf16
//     pool through encode_bf16_avx2 (integer rounding, 8 at a time) instead of one scalar
//     conversion per element: the same bits (the scalar bf16 writer took 1.7% of a bf16 prefill's
//     samples, perf of loom-server on llama-125m's shape).
// Rows of a tile (the query heads of one GQA group, x tokens) walk the blocks in the same order
// as the portable kernel, each block being read from memory once and reused from L1 by every row.
// A row's arithmetic does not depend on its tile-mates or its group: each score is the same 8 lane
// chains and the same tree, each output element one chain over the keys. So batched and
// alone runs, and a prefill row and the same token decoded alone, agree bit for bit; this kernel
// matches the portable one to float rounding.
#include "flash_cpu_kernel.hpp"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

#include <algorithm>
#include <cstring>
#include <limits>

#include "loom/sdk_kv_quant.hpp"
#include "loom/sdk_simd_exp.hpp"

#pragma GCC push_options
#pragma GCC target("avx2,fma,f16c")

namespace loom::flash_cpu {
namespace {

// e^x for 8 lanes (loom/sdk_simd_exp.hpp): about 1 ulp, exp(0) exactly 1, 0 below ln(FLT_MIN)
// (including -inf, the running max of a row before its first block).
inline __m256 exp8(__m256 x) { return sdk::exp8_avx2(x); }

inline float hsum(__m256 v) {
  __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_add_ps(s, _mm_movehl_ps(s, s));
  s = _mm_add_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

inline float hmax(__m256 v) {
  __m128 s = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
  s = _mm_max_ps(s, _mm_movehl_ps(s, s));
  s = _mm_max_ss(s, _mm_movehdup_ps(s));
  return _mm_cvtss_f32(s);
}

// Elements d..d+7 (load8) or d..d+3 with zero upper lanes (load4) of one KV row, as floats. The
// int8/fp8 values come out unscaled; the caller applies the block-head scale.
template <loom_dtype kDtype>
inline __m256 load8(const char* row, int32_t d, const float* fp8) {
  if constexpr (kDtype == LOOM_DTYPE_F32) {
    return _mm256_loadu_ps(reinterpret_cast<const float*>(row) + d);
  } else if constexpr (kDtype == LOOM_DTYPE_F16) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
  } else if constexpr (kDtype == LOOM_DTYPE_BF16) {
    const __m256i w = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(row + 2 * d)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(w, 16));
  } else if constexpr (kDtype == LOOM_DTYPE_I8) {
    return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d))));
  } else {
    const __m256i idx = _mm256_cvtepu8_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + d)));
    return _mm256_i32gather_ps(fp8, idx, 4);
  }
}

template <loom_dtype kDtype>
inline __m256 load4(const char* row, int32_t d, const float* fp8) {
  __m128 x;
  if constexpr (kDtype == LOOM_DTYPE_F32) {
    x = _mm_loadu_ps(reinterpret_cast<const float*>(row) + d);
  } else if constexpr (kDtype == LOOM_DTYPE_F16) {
    x = _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 2 * d)));
  } else if constexpr (kDtype == LOOM_DTYPE_BF16) {
    const __m128i w = _mm_cvtepu16_epi32(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(row + 2 * d)));
    x = _mm_castsi128_ps(_mm_slli_epi32(w, 16));
  } else {
    int32_t bytes;
    std::memcpy(&bytes, row + d, sizeof(bytes));
    if constexpr (kDtype == LOOM_DTYPE_I8) {
      x = _mm_cvtepi32_ps(_mm_cvtepi8_epi32(_mm_cvtsi32_si128(bytes)));
    } else {
      x = _mm_i32gather_ps(fp8, _mm_cvtepu8_epi32(_mm_cvtsi32_si128(bytes)), 4);
    }
  }
  return _mm256_zextps128_ps256(x);
}

// One K/V block of one KV head: row j starts at base + j * row_bytes.
struct BlockRows {
  const char* base;
  int64_t row_bytes;
  float scale;  // int8 block-head scale, 1 otherwise
  const float* row_scales;  // fp8: [n rounded up to 8] each row's scale (finite past n); else unused
  const char* row(int32_t j) const { return base + j * row_bytes; }
};

// Rows of one block-head folded together: up to kGroup rows (of one KV head, with the same causal
// key count n) share every K and V load, as a GEMM micro-kernel shares its operands.
constexpr int kGroup = 6;

// Rows x keys of one dot_pass: R (at most 3) rows' query chunks, one K chunk at a time and
// R x kKeysPerPass<R> accumulators in the 16 ymm registers (3 x 4: 12 FMAs per 7 loads); a
// 16-key block is a whole number of passes.
template <int R>
constexpr int kKeysPerPass = R == 1 ? 8 : 4;

// The scores of 4 keys from their accumulators of 8 lane partial sums, each summed
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)).
inline __m128 reduce4(__m256 a0, __m256 a1, __m256 a2, __m256 a3) {
  const __m256 u = _mm256_hadd_ps(_mm256_hadd_ps(a0, a1), _mm256_hadd_ps(a2, a3));  // [0123 of each | 4567]
  return _mm_add_ps(_mm256_castps256_ps128(u), _mm256_extractf128_ps(u, 1));
}

// scores[r * lds + j0 + i] = q_r . k_{j0 + i} (unscaled) for r < R and i < kKeys (keys all < n),
// and 0 for i in [kKeys, 4): lane l of a key's accumulator sums q_r[d] * k[d] over d = l, l + 8,
// l + 16, ... in one FMA chain from 0 (a last chunk of 4 has zero upper lanes), then reduce4
// folds the lanes. The arithmetic of a score is the same whatever R, kKeys and j0 are.
template <loom_dtype kDtype, int R, int kKeys>
inline void dot_pass(const float* const* q, const BlockRows& k, int32_t j0, int32_t D, const float* fp8,
                     float* scores, int32_t lds) {
  __m256 acc[R][kKeys];
  for (int r = 0; r < R; ++r)
    for (int i = 0; i < kKeys; ++i) acc[r][i] = _mm256_setzero_ps();
  int32_t d = 0;
  for (; d + 8 <= D; d += 8) {
    __m256 qv[R];
    for (int r = 0; r < R; ++r) qv[r] = _mm256_loadu_ps(q[r] + d);
    for (int i = 0; i < kKeys; ++i) {
      const __m256 kv = load8<kDtype>(k.row(j0 + i), d, fp8);
      for (int r = 0; r < R; ++r) acc[r][i] = _mm256_fmadd_ps(qv[r], kv, acc[r][i]);
    }
  }
  if (d < D) {  // head_dim is a multiple of 4: a last chunk of 4
    for (int i = 0; i < kKeys; ++i) {
      const __m256 kv = load4<kDtype>(k.row(j0 + i), d, fp8);
      for (int r = 0; r < R; ++r)
        acc[r][i] = _mm256_fmadd_ps(_mm256_zextps128_ps256(_mm_loadu_ps(q[r] + d)), kv, acc[r][i]);
    }
  }
  const __m256 zero = _mm256_setzero_ps();
  for (int r = 0; r < R; ++r) {
    for (int i = 0; i < kKeys; i += 4) {
      const auto at = [&](int x) { return i + x < kKeys ? acc[r][i + x] : zero; };
      _mm_storeu_ps(scores + r * lds + j0 + i, reduce4(at(0), at(1), at(2), at(3)));
    }
  }
}

// dot_pass over keys 0 .. n-1 for R <= 3 rows: full passes, then the last 1-7 keys.
template <loom_dtype kDtype, int R>
inline void dot_rows(const float* const* q, const BlockRows& k, int32_t n, int32_t D, const float* fp8, float* scores,
                     int32_t lds) {
  constexpr int kKeys = kKeysPerPass<R>;
  int32_t j = 0;
  for (; j + kKeys <= n; j += kKeys) dot_pass<kDtype, R, kKeys>(q, k, j, D, fp8, scores, lds);
  if (j + 4 <= n) {  // R = 1: a last 4 to 7 keys
    dot_pass<kDtype, R, 4>(q, k, j, D, fp8, scores, lds);
    j += 4;
  }
  switch (n - j) {
    case 3: dot_pass<kDtype, R, 3>(q, k, j, D, fp8, scores, lds); break;
    case 2: dot_pass<kDtype, R, 2>(q, k, j, D, fp8, scores, lds); break;
    case 1: dot_pass<kDtype, R, 1>(q, k, j, D, fp8, scores, lds); break;
    default: break;
  }
}

// scores[r * lds + j] = q_r . k_j (unscaled) for r < R and j < n, the lanes up to n rounded up
// to 8 being 0: dot products along head_dim, so the K rows are read as they lie in the pool (no
// transpose) and a decode row of one head (R = 1) keeps 8 keys' chains in flight. Rows are taken
// 3 or 2 at a time; a row's scores do not depend on its group-mates.
template <loom_dtype kDtype, int R>
inline void group_scores(const float* const* q, const BlockRows& k, int32_t n, int32_t D, const float* fp8,
                         float* scores, int32_t lds) {
  if constexpr (R <= 3) {
    dot_rows<kDtype, R>(q, k, n, D, fp8, scores, lds);
  } else {  // 4 = 2 + 2, 5 = 3 + 2, 6 = 3 + 3
    constexpr int kFirst = R == 4 ? 2 : 3;
    dot_rows<kDtype, kFirst>(q, k, n, D, fp8, scores, lds);
    dot_rows<kDtype, R - kFirst>(q + kFirst, k, n, D, fp8, scores + kFirst * lds, lds);
  }
  const int32_t written = (n + 3) & ~3;
  if (written < ((n + 7) & ~7))
    for (int r = 0; r < R; ++r) _mm_storeu_ps(scores + r * lds + written, _mm_setzero_ps());
}

// One row's softmax step over keys 0..n-1 of a block: scales and masks its scores, updates its
// running (m, l) and turns the scores into V weights in place. Returns alpha = exp(m_old - m_new),
// the factor the row's accumulator must be rescaled by.
inline float softmax_step(float* scores, int32_t skip, int32_t n, float score_scale, const float* k_row_scales,
                          float v_scale, const float* v_row_scales, float& m, float& l) {
  const __m256 lane = _mm256_setr_ps(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256 neg_inf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 vmax = neg_inf;
  for (int32_t j = 0; j < n; j += 8) {
    // Lanes past n hold the zero-padded keys' scores, lanes before skip keys outside a sliding
    // window: masked to -inf, so their weight is 0 (exp8(-inf) is 0, and 0 * v adds nothing).
    const __m256 key = _mm256_add_ps(lane, _mm256_set1_ps(static_cast<float>(j)));
    const __m256 live = _mm256_and_ps(_mm256_cmp_ps(key, _mm256_set1_ps(static_cast<float>(n)), _CMP_LT_OQ),
                                      _mm256_cmp_ps(key, _mm256_set1_ps(static_cast<float>(skip)), _CMP_GE_OQ));
    __m256 ss = _mm256_set1_ps(score_scale);
    if (k_row_scales != nullptr) ss = _mm256_mul_ps(ss, _mm256_loadu_ps(k_row_scales + j));
    const __m256 s = _mm256_blendv_ps(neg_inf, _mm256_mul_ps(_mm256_loadu_ps(scores + j), ss), live);
    _mm256_storeu_ps(scores + j, s);
    vmax = _mm256_max_ps(vmax, s);
  }
  const float m_new = std::max(m, hmax(vmax));
  // First block: m is -inf, so alpha is 0 and the zeroed accumulator stays zero.
  const float alpha = _mm256_cvtss_f32(exp8(_mm256_set1_ps(m - m_new)));
  const __m256 vm = _mm256_set1_ps(m_new);
  __m256 vsum = _mm256_setzero_ps();
  for (int32_t j = 0; j < n; j += 8) {
    const __m256 p = exp8(_mm256_sub_ps(_mm256_loadu_ps(scores + j), vm));
    vsum = _mm256_add_ps(vsum, p);
    __m256 w = _mm256_mul_ps(p, _mm256_set1_ps(v_scale));  // V's scale folded into the weight
    if (v_row_scales != nullptr) w = _mm256_mul_ps(w, _mm256_loadu_ps(v_row_scales + j));
    _mm256_storeu_ps(scores + j, w);
  }
  l = l * alpha + hsum(vsum);
  m = m_new;
  return alpha;
}

// Chunks of 8 head_dim elements one pass of group_values keeps in registers for R rows: R x that
// many accumulators, at most 12 (a decode row of one head takes 64 elements per pass, so 8 chains
// over the keys are in flight instead of 2).
template <int R>
constexpr int kChunksPerPass = R == 1 ? 8 : std::max(1, 12 / R);

// acc_r[d .. d + 8 * kChunks) = alpha_r acc_r + sum_{j < n} w_rj v_j, sharing each V load among
// the R rows.
template <loom_dtype kDtype, int R, int kChunks>
inline void values_pass(float* const* acc, const float* alpha, const float* w, int32_t lds, const BlockRows& v,
                        int32_t n, int32_t d, const float* fp8) {
  __m256 a[R][kChunks];
  for (int r = 0; r < R; ++r) {
    const __m256 va = _mm256_set1_ps(alpha[r]);
    for (int c = 0; c < kChunks; ++c) a[r][c] = _mm256_mul_ps(_mm256_loadu_ps(acc[r] + d + 8 * c), va);
  }
  // The accumulators fill up to 12 of the 16 ymm registers, so the loop keeps live whichever of
  // the rows' weights or the V chunks are fewer: holding both (R + kChunks more) spilled an
  // accumulator to the stack, and its chain then waited on a store-forward every key
  // (loom-bench-attention, 125m decode 8x1 @300 with the KV in cache, 1 thread: 4.1 -> 3.7 ms).
  for (int32_t j = 0; j < n; ++j) {
    const char* vj = v.row(j);
    if constexpr (R <= 3) {
      __m256 x[R];
      for (int r = 0; r < R; ++r) x[r] = _mm256_broadcast_ss(w + r * lds + j);
      for (int c = 0; c < kChunks; ++c) {
        const __m256 vv = load8<kDtype>(vj, d + 8 * c, fp8);
        for (int r = 0; r < R; ++r) a[r][c] = _mm256_fmadd_ps(x[r], vv, a[r][c]);
      }
    } else {
      __m256 vv[kChunks];
      for (int c = 0; c < kChunks; ++c) vv[c] = load8<kDtype>(vj, d + 8 * c, fp8);
      for (int r = 0; r < R; ++r) {
        const __m256 x = _mm256_broadcast_ss(w + r * lds + j);
        for (int c = 0; c < kChunks; ++c) a[r][c] = _mm256_fmadd_ps(x, vv[c], a[r][c]);
      }
    }
  }
  for (int r = 0; r < R; ++r)
    for (int c = 0; c < kChunks; ++c) _mm256_storeu_ps(acc[r] + d + 8 * c, a[r][c]);
}

// acc_r = alpha_r acc_r + sum_{j < n} w_rj v_j for R rows sharing each V load, in passes of
// kChunksPerPass<R> chunks of 8 elements of head_dim (then single chunks, then a last 4). Each
// element is one chain (a multiply by alpha, then FMAs in increasing j), the same whatever R is.
template <loom_dtype kDtype, int R>
inline void group_values(float* const* acc, const float* alpha, const float* w, int32_t lds, const BlockRows& v,
                         int32_t n, int32_t D, const float* fp8) {
  constexpr int kChunks = kChunksPerPass<R>;
  int32_t d = 0;
  for (; d + 8 * kChunks <= D; d += 8 * kChunks) values_pass<kDtype, R, kChunks>(acc, alpha, w, lds, v, n, d, fp8);
  for (; d + 8 <= D; d += 8) values_pass<kDtype, R, 1>(acc, alpha, w, lds, v, n, d, fp8);
  if (d < D) {  // head_dim is a multiple of 4: a last chunk of 4
    __m256 a[R];
    for (int r = 0; r < R; ++r)
      a[r] = _mm256_mul_ps(_mm256_zextps128_ps256(_mm_loadu_ps(acc[r] + d)), _mm256_set1_ps(alpha[r]));
    for (int32_t j = 0; j < n; ++j) {
      const __m256 v0 = load4<kDtype>(v.row(j), d, fp8);
      for (int r = 0; r < R; ++r) a[r] = _mm256_fmadd_ps(_mm256_broadcast_ss(w + r * lds + j), v0, a[r]);
    }
    for (int r = 0; r < R; ++r) _mm_storeu_ps(acc[r] + d, _mm256_castps256_ps128(a[r]));
  }
}

// Folds keys 0..n-1 of one block-head into R rows' running (m, l, acc): scores from the
// dot products along head_dim, each row's softmax step, then the weighted V rows.
template <loom_dtype kDtype, int R>
void fold_group(const float* const* q, const BlockRows& k, const BlockRows& v,
                int32_t skip, int32_t n, int32_t D, float scale, const float* fp8, float* m, float* l, float* const* acc,
                float* scores, int32_t lds) {
  group_scores<kDtype, R>(q, k, n, D, fp8, scores, lds);
  float alpha[R];
  for (int r = 0; r < R; ++r)
    alpha[r] = softmax_step(scores + r * lds, skip, n, scale * k.scale, k.row_scales, v.scale, v.row_scales, m[r], l[r]);
  group_values<kDtype, R>(acc, alpha, scores, lds, v, n, D, fp8);
}

template <loom_dtype kDtype>
void fold_rows(int32_t rows, const float* const* q, const BlockRows& k,
               const BlockRows& v, int32_t skip, int32_t n, int32_t D, float scale, const float* fp8, float* m, float* l,
               float* const* acc, float* scores, int32_t lds) {
  switch (rows) {
    case 1: fold_group<kDtype, 1>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
    case 2: fold_group<kDtype, 2>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
    case 3: fold_group<kDtype, 3>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
    case 4: fold_group<kDtype, 4>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
    case 5: fold_group<kDtype, 5>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
    default: fold_group<kDtype, kGroup>(q, k, v, skip, n, D, scale, fp8, m, l, acc, scores, lds); break;
  }
}

// Rows 0..rows-1 of one block-head, each row_bytes long, into the caches (hint T0).
inline void prefetch_rows(const char* base, int64_t stride, int32_t rows, int64_t row_bytes) {
  for (int32_t j = 0; j < rows; ++j) {
    const char* r = base + j * stride;
    for (int64_t o = 0; o < row_bytes; o += 64) _mm_prefetch(r + o, _MM_HINT_T0);
    _mm_prefetch(r + row_bytes - 1, _MM_HINT_T0);  // a row that straddles a line boundary
  }
}

// Block-heads prefetched ahead of the one being folded (into L1), and whole blocks of the item's
// heads (into L2).
constexpr int32_t kAhead = 2;
constexpr int32_t kBlocksAhead = 2;

template <loom_dtype kDtype>
void tile(const TileArgs& a, TileScratch& s) {
  const int32_t R = a.rows, D = a.head_dim, bs = a.block_size, H = a.kv_heads, per_head = R / H;
  if (R <= 0) return;
  s.acc.assign(static_cast<size_t>(R) * D, 0.0f);
  s.m.assign(static_cast<size_t>(R), -std::numeric_limits<float>::infinity());
  s.l.assign(static_cast<size_t>(R), 0.0f);
  const size_t padded = (static_cast<size_t>(bs) + 7) / 8 * 8;
  if (s.scores.size() < kGroup * padded) s.scores.resize(kGroup * padded);
  constexpr bool kRowScales = kDtype == LOOM_DTYPE_FP8_E4M3;
  if (kRowScales && s.k_row_scales.size() < padded) {
    s.k_row_scales.assign(padded, 1.0f);  // lanes past a block's rows stay finite (masked, times weight 0)
    s.v_row_scales.assign(padded, 1.0f);
  }
  const int64_t es = sdk::kv::element_size(a.kv_dtype);
  const int64_t k_stride = a.k_row_stride * es, v_stride = a.v_row_stride * es;
  const int64_t k_head_bytes = a.k_head_stride * es, v_head_bytes = a.v_head_stride * es;
  const int64_t row_bytes = D * es;
  const float* fp8 = kDtype == LOOM_DTYPE_FP8_E4M3 ? sdk::kv::fp8_e4m3_table().data() : nullptr;
  // Oldest position a row at pos attends to (0 without a sliding window).
  const auto window_first = [&](int32_t pos) { return a.window > 0 && pos >= a.window ? pos - a.window + 1 : 0; };
  // Keys min_first .. max_pos of the partition are read: the union of the rows' ranges in it.
  int32_t max_pos = 0, min_first = INT32_MAX;
  for (int32_t r = 0; r < R; ++r) {
    max_pos = std::max(max_pos, std::min(a.row_pos[r], a.kv_end - 1));
    min_first = std::min(min_first, std::max(window_first(a.row_pos[r]), a.kv_begin));
  }
  if (min_first > max_pos) return;  // no row has a key in the partition
  const int32_t first_block = min_first / bs, last_block = max_pos / bs;
  const char* k_head = static_cast<const char*>(a.k_head);
  const char* v_head = static_cast<const char*>(a.v_head);
  auto k_block = [&](int32_t b) { return k_head + a.block_table[b] * a.k_block_stride * es; };
  auto v_block = [&](int32_t b) { return v_head + a.block_table[b] * a.v_block_stride * es; };
  // Scales after the block's data (loom/sdk_kv_quant.hpp): int8 one f32 per head, fp8 one f16
  // per (slot, head), gathered per block-head into an f32 array once for all rows of the tile.
  auto block_scale = [&](const char* block, int32_t h) {
    float f = 1.0f;
    if constexpr (kDtype == LOOM_DTYPE_I8) std::memcpy(&f, block + a.scale_offset + 4 * h, sizeof(f));
    return f;
  };
  auto row_scales = [&](const char* block, int32_t h, int32_t n, std::vector<float>& out) -> const float* {
    if constexpr (!kRowScales) return nullptr;
    const char* at = block + a.scale_offset + h * a.scale_head_stride;
    for (int32_t j = 0; j < n; ++j)
      out[static_cast<size_t>(j)] = sdk::kv::load_scale(kDtype, at + j * a.scale_slot_stride);
    return out.data();
  };
  auto live_rows = [&](int32_t b) { return std::min(bs, max_pos - b * bs + 1); };
  // Block-heads are folded in the order u = block * H + head; unit u + kAhead is prefetched
  // when unit u starts, so a few block-heads (not whole multi-head blocks, which may exceed L1)
  // are in flight at a time.
  const int32_t units = (last_block + 1) * H;
  auto prefetch_unit = [&](int32_t u) {
    if (u >= units) return;
    const int32_t b = u / H, h = u % H;  // u counts from block 0; the walk starts at first_block
    prefetch_rows(k_block(b) + h * k_head_bytes, k_stride, live_rows(b), row_bytes);
    prefetch_rows(v_block(b) + h * v_head_bytes, v_stride, live_rows(b), row_bytes);
  };
  for (int32_t u = first_block * H; u < first_block * H + kAhead; ++u) prefetch_unit(u);

  // Block order is the same for every row (ascending, from the first block any row's window
  // reaches), so each row sees the same sequence of rescalings whatever tile it is in.
  for (int32_t b = first_block; b <= last_block; ++b) {
    const char* kb = k_block(b);
    const char* vb = v_block(b);
    const int32_t first = b * bs;
    for (int32_t h = 0; h < H; ++h) {
      prefetch_unit(b * H + h + kAhead);
      // kBlocksAhead blocks ahead, the item's whole run of heads into L2: the unit prefetches
      // come too late to hide memory's latency on decode rows (measured: the loads of K and V
      // rows took the samples), and a block's rows of H heads lie in one span. Each block-head
      // issues 1/H of those rows, K and V in step: issued all at once at the block's start, they
      // filled the miss buffers and the prefetch instructions themselves stalled the fold
      // (loom-bench-attention, 2 threads, bf16 KV: 125m decode 8x1 @300 6.8 -> 4.3 ms, 32x1
      // 30.6 -> 19.1 ms). Not for the first blocks: measured faster than prefetching them too.
      // With one head the unit prefetches already reach kAhead = kBlocksAhead blocks ahead.
      if (H > 1 && b + kBlocksAhead <= last_block) {
        const int32_t nb = b + kBlocksAhead, live_nb = live_rows(nb);
        const int64_t span = (H - 1) * k_head_bytes + row_bytes, v_span = (H - 1) * v_head_bytes + row_bytes;
        for (int32_t j = live_nb * h / H; j < live_nb * (h + 1) / H; ++j) {
          const char* kr = k_block(nb) + j * k_stride;
          const char* vr = v_block(nb) + j * v_stride;
          for (int64_t o = 0; o < std::max(span, v_span); o += 64) {
            if (o < span) _mm_prefetch(kr + o, _MM_HINT_T1);
            if (o < v_span) _mm_prefetch(vr + o, _MM_HINT_T1);
          }
        }
      }
      const int32_t live = live_rows(b);
      const BlockRows k{kb + h * k_head_bytes, k_stride, block_scale(kb, h), row_scales(kb, h, live, s.k_row_scales)};
      const BlockRows v{vb + h * v_head_bytes, v_stride, block_scale(vb, h), row_scales(vb, h, live, s.v_row_scales)};
      // Causal mask by position: keys first .. row_pos[r] of this block; a sliding window also
      // masks the block's keys before the row's window_first (skip of them), and the partition
      // its keys outside [kv_begin, kv_end).
      const auto keys = [&](int32_t r) { return std::min(bs, std::min(a.row_pos[r], a.kv_end - 1) - first + 1); };
      const auto skipped = [&](int32_t r) {
        return std::clamp(std::max(window_first(a.row_pos[r]), a.kv_begin) - first, 0, bs);
      };
      for (int32_t r = h * per_head, end = (h + 1) * per_head; r < end;) {
        const int32_t n = keys(r), skip = skipped(r);
        if (n - skip <= 0) {
          ++r;
          continue;
        }
        // A group: the next rows with the same key range (every row, except in the block that
        // holds the rows' own positions or their window's start, where it is the query heads of
        // one token).
        int32_t g = 1;
        while (g < kGroup && r + g < end && keys(r + g) == n && skipped(r + g) == skip) ++g;
        float* acc[kGroup];
        for (int32_t i = 0; i < g; ++i) acc[i] = s.acc.data() + static_cast<size_t>(r + i) * D;
        fold_rows<kDtype>(g, a.q_rows + r, k, v, skip, n, D, a.scale, fp8, s.m.data() + r,
                          s.l.data() + r, acc, s.scores.data(), static_cast<int32_t>(padded));
        r += g;
      }
    }
  }
  store_rows(a, s.acc.data(), s.m.data(), s.l.data());
}

}  // namespace

void encode_f16_avx2(const float* x, uint16_t* out, int32_t n) {
  int32_t d = 0;
  for (; d + 8 <= n; d += 8) {
    const __m256 v = _mm256_loadu_ps(x + d);
    if (_mm256_movemask_ps(_mm256_cmp_ps(v, v, _CMP_UNORD_Q)) != 0) {  // a NaN: the SDK's code for it
      for (int32_t i = d; i < d + 8; ++i) out[i] = sdk::f32_to_f16(x[i]);
      continue;
    }
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + d), _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT));
  }
  for (; d < n; ++d) out[d] = sdk::f32_to_f16(x[d]);
}

void encode_bf16_avx2(const float* x, uint16_t* out, int32_t n) {
  const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff);
  const __m256i abs_mask = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
  int32_t d = 0;
  for (; d + 8 <= n; d += 8) {
    // sdk::f32_to_bf16 on 8 lanes: round to nearest even by integer addition, a NaN kept quiet.
    const __m256i u = _mm256_castps_si256(_mm256_loadu_ps(x + d));
    const __m256i lsb = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
    const __m256i rounded = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, lsb)), 16);
    // Both sides are non-negative as int32, so the signed compare is the unsigned one.
    const __m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs_mask), inf);
    const __m256i quiet = _mm256_or_si256(_mm256_srli_epi32(u, 16), _mm256_set1_epi32(0x40));
    const __m256i h = _mm256_blendv_epi8(rounded, quiet, nan);  // 8 x 16 bits in the low halves
    // packus keeps each 128-bit lane's four values (all below 2^16, so no saturation); the
    // permute joins the two lanes' halves.
    const __m256i packed = _mm256_permute4x64_epi64(_mm256_packus_epi32(h, h), 0x08);
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + d), _mm256_castsi256_si128(packed));
  }
  for (; d < n; ++d) out[d] = sdk::f32_to_bf16(x[d]);
}

void tile_avx2(const TileArgs& a, TileScratch& s) {
  switch (a.kv_dtype) {
    case LOOM_DTYPE_F32: tile<LOOM_DTYPE_F32>(a, s); break;
    case LOOM_DTYPE_F16: tile<LOOM_DTYPE_F16>(a, s); break;
    case LOOM_DTYPE_BF16: tile<LOOM_DTYPE_BF16>(a, s); break;
    case LOOM_DTYPE_I8: tile<LOOM_DTYPE_I8>(a, s); break;
    default: tile<LOOM_DTYPE_FP8_E4M3>(a, s); break;  // the plugin admits nothing else
  }
}

}  // namespace loom::flash_cpu

#pragma GCC pop_options

#endif
