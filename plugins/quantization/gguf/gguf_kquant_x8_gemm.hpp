// The GEMM over K-quant x8 weights (gguf_kquant_x8.hpp), generic in how a super-block's exact
// int32 sums are formed: F::sums<R>(record, a, b, side, isum, msum) gives, lane = weight row, R
// activation rows' sum_s scale_s <code_s, a_s> (with the -32, -4 or +128 offsets of Q6_K, Q3_K
// and IQ4_XS taken off) and, for Q2_K/Q4_K/Q5_K, sum_s min_s * sum(a_s). Included inside an
// anonymous namespace by each kernel file after its `#pragma GCC target`, so each instruction set
// compiles its own copy; it also gives the F types kq_bcast4, the code unpacking (kq_codes,
// kq_codes2, generic over the vector type) and the record offsets (KQuantRecord, KQuant2Record).
//
// Per (activation row, weight row) the super-blocks fold in order, as the portable kernels do:
//   term = (d_w * d_a) * float(isum), then (mins) term = term - (dmin_w * d_a) * float(msum),
//   acc = acc + term
// separately rounded (no fma), so kernels whose F gives the same integers give the portable
// bits.
//
// GEMM: R activation rows (F::kRows, fewer at the end) share each loaded and unpacked record.
// Every record read asks for the one kStreamAhead bytes on (gguf_stream_prefetch.hpp), an
// eighth at each sub-block step (kq_prefetch_part).

// Where a record keeps what, by format (gguf_kquant_x8.hpp).
template <loom_dtype T>
struct KQuantRecord {
  static constexpr bool kQ5 = T == LOOM_DTYPE_Q5_K, kQ6 = T == LOOM_DTYPE_Q6_K;
  static constexpr bool kMins = T == LOOM_DTYPE_Q4_K || kQ5;
  static constexpr int64_t kBitsAt = 1024;                                  // Q5_K fifth bits, Q6_K top bits
  static constexpr int64_t kScaleAt = kQ5 ? 1280 : kQ6 ? 1536 : 1024;      // [p][r][2] scales
  static constexpr int64_t kMinAt = kMins ? kScaleAt + 64 : -1;             // [p][r][2] mins
  static constexpr int64_t kDAt = kScaleAt + (kMins || kQ6 ? 128 : 64);    // 8 f16 d
  static constexpr int64_t kDminAt = kMins ? kDAt + 16 : -1;                // 8 f16 dmin
  static constexpr int64_t kBytes = kquant_x8_record_bytes(T);
  static_assert((kMins ? kDminAt : kDAt) + 16 == kBytes, "the record's parts fill it");
};

// Q2_K and Q3_K (gguf_kquant_x8.hpp's 2-bit layout).
template <loom_dtype T>
struct KQuant2Record {
  static constexpr bool kQ3 = T == LOOM_DTYPE_Q3_K;
  static constexpr int64_t kBitsAt = 512;                   // Q3_K bit 2 of the codes
  static constexpr int64_t kScaleAt = kQ3 ? 768 : 512;      // [p][r][2] scales (Q2_K: | min << 4)
  static constexpr int64_t kDAt = kScaleAt + 128;           // 8 f16 d
  static constexpr int64_t kDminAt = kQ3 ? -1 : kDAt + 16;  // 8 f16 dmin
  static constexpr int64_t kBytes = kquant_x8_record_bytes(T);
  static_assert((kQ3 ? kDAt : kDminAt) + 16 == kBytes, "the record's parts fill it");
};

inline __attribute__((always_inline)) __m256i kq_bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}
inline __attribute__((always_inline)) __m256i kq_load(const uint8_t* p) {
  return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p));
}
// 16 bytes widened to int16: one (sub-block 2p, 2p + 1) pair per 32-bit lane.
template <bool kSigned>
inline __attribute__((always_inline)) __m256i kq_pairs(const uint8_t* p) {
  const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(p));
  return kSigned ? _mm256_cvtepi8_epi16(v) : _mm256_cvtepu8_epi16(v);
}

// The vector the code unpacking works on: Ymm holds one group (8 lanes, ra's record); the VNNI
// file's Zmm two adjacent groups (16 lanes, ra's then rb's record at the same offset).
struct Ymm {
  using I = __m256i;
  static inline __attribute__((always_inline)) I load(const uint8_t* ra, const uint8_t*, int64_t off) { return kq_load(ra + off); }
  static inline __attribute__((always_inline)) I and_(I a, I b) { return _mm256_and_si256(a, b); }
  static inline __attribute__((always_inline)) I or_(I a, I b) { return _mm256_or_si256(a, b); }
  static inline __attribute__((always_inline)) I set8(char v) { return _mm256_set1_epi8(v); }
  static inline __attribute__((always_inline)) I srli16(I a, int n) { return _mm256_srli_epi16(a, n); }
  static inline __attribute__((always_inline)) I slli16(I a, int n) { return _mm256_slli_epi16(a, n); }
  static inline __attribute__((always_inline)) I slli32(I a, int n) { return _mm256_slli_epi32(a, n); }
  static inline __attribute__((always_inline)) I srli32(I a, int n) { return _mm256_srli_epi32(a, n); }
};

// Q6_K: bits 2j, 2j + 1 of each byte of v to bits 4, 5 (what lands elsewhere is masked off).
template <class V>
inline __attribute__((always_inline)) typename V::I kq_top_bits(typename V::I v, int j) {
  return j < 2 ? V::slli32(v, 4 - 2 * j) : j == 2 ? v : V::srli32(v, 2);
}

// Chunk j (< 4) of sub-block s (< 8), lane = weight row: lo holds values 32s + 4j .. + 3, hi
// values 32s + 16 + 4j .. + 3 of its row, one code byte each (IQ4_XS: kIQ4NL indices).
template <loom_dtype T, class V = Ymm>
inline __attribute__((always_inline)) void kq_codes(const uint8_t* ra, const uint8_t* rb, int s, int j,
                                                    typename V::I* lo, typename V::I* hi) {
  using L = KQuantRecord<T>;
  using I = typename V::I;
  const I mask = V::set8(0xF);
  const I w = V::load(ra, rb, 32 * (4 * s + j));
  *lo = V::and_(w, mask);
  *hi = V::and_(V::srli16(w, 4), mask);
  if constexpr (L::kQ5) {
    const I bits = V::load(ra, rb, L::kBitsAt + 32 * s), fifth = V::set8(0x10);
    *lo = V::or_(*lo, V::and_(V::slli32(bits, 4 - j), fifth));
    *hi = V::or_(*hi, V::and_(V::srli32(bits, j), fifth));
  } else if constexpr (L::kQ6) {
    const I top = V::set8(0x30);
    const I bl = V::load(ra, rb, L::kBitsAt + 64 * s), bh = V::load(ra, rb, L::kBitsAt + 64 * s + 32);
    // Bits 2j, 2j + 1 of each byte to bits 4, 5.
    *lo = V::or_(*lo, V::and_(kq_top_bits<V>(bl, j), top));
    *hi = V::or_(*hi, V::and_(kq_top_bits<V>(bh, j), top));
  }
}
template <loom_dtype T>
inline __attribute__((always_inline)) void kq_codes(const uint8_t* rec, int s, int j, __m256i* lo, __m256i* hi) {
  kq_codes<T, Ymm>(rec, rec, s, j, lo, hi);
}

// The codes of sub-block 4m + q (q < 4), chunk j (< 4), lane = weight row: values
// 64m + 16q + 4j .. + 3 of its row, one byte each (0..3, Q3_K 0..7).
template <loom_dtype T, class V = Ymm>
inline __attribute__((always_inline)) typename V::I kq_codes2(const uint8_t* ra, const uint8_t* rb, int m, int q,
                                                              int j) {
  using I = typename V::I;
  I c = V::and_(V::srli16(V::load(ra, rb, 32 * (4 * m + j)), 2 * q), V::set8(3));
  if constexpr (T == LOOM_DTYPE_Q3_K) {
    const I h = V::load(ra, rb, KQuant2Record<T>::kBitsAt + 64 * m + 32 * (j / 2));
    const int x = 4 * (j % 2) + q - 2;  // bit 4 (j % 2) + q of each byte to bit 2
    c = V::or_(c, V::and_(x < 0 ? V::slli16(h, -x) : V::srli16(h, x), V::set8(4)));
  }
  return c;
}
template <loom_dtype T>
inline __attribute__((always_inline)) __m256i kq_codes2(const uint8_t* rec, int m, int q, int j) {
  return kq_codes2<T, Ymm>(rec, rec, m, q, j);
}

// Part s (of 8, one per sub-block step) of the bytes kStreamAhead past a record: spread this way
// rather than asked for at once, since Q6_K's 27 lines at once overflowed the L1's miss buffers
// (prefetches dropped, the loads of the top bits missing: decode at half speed).
template <int64_t kBytes>
inline __attribute__((always_inline)) void kq_prefetch_part(const uint8_t* rec, int s) {
  constexpr int64_t kLines = (kBytes + 63) / 64;
  const int64_t first = kLines * s / 8, last = kLines * (s + 1) / 8;
  for (int64_t l = first; l < last; ++l)
    __builtin_prefetch(rec + static_cast<int64_t>(loom_gguf::kStreamAhead) + 64 * l, 0, 3);
}

#include "gguf_x8_store.hpp"

// R activation rows x one 8-row group, all nb super-blocks; y rows ys apart, n_out (<= 8) columns.
template <class F, int R>
inline __attribute__((always_inline)) void kq_group_rows(const uint8_t* grp, int64_t nb,
                                                         const loom::sdk::gguf::BlockQ8_K* const* a,
                                                         const int32_t* const* side, float* y, int64_t ys,
                                                         int64_t n_out) {
  using L = typename F::Layout;
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* rec = grp + b * L::kBytes;
    __m256i isum[R], msum[R];
    F::template sums<R>(rec, a, b, side, isum, msum);
    const __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + L::kDAt)));
    for (int r = 0; r < R; ++r) {
      const __m256 da = _mm256_set1_ps(a[r][b].d);
      __m256 term = _mm256_mul_ps(_mm256_mul_ps(dw, da), _mm256_cvtepi32_ps(isum[r]));
      if constexpr (L::kDminAt >= 0) {
        const __m256 dminw = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(rec + L::kDminAt)));
        term = _mm256_sub_ps(term, _mm256_mul_ps(_mm256_mul_ps(dminw, da), _mm256_cvtepi32_ps(msum[r])));
      }
      acc[r] = _mm256_add_ps(acc[r], term);
    }
  }
  x8_store<R>(acc, y, ys, n_out);
}

template <class F, int R>
__attribute__((noinline)) void kq_rows_x_groups(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                      const int32_t* side, int64_t t0, float* y, int64_t ys) {
  constexpr int64_t kRows = loom_gguf::kGroupRows;
  const int64_t nb = w.n_blocks;
  const loom::sdk::gguf::BlockQ8_K* a[R];
  const int32_t* s[R];
  for (int r = 0; r < R; ++r) {
    a[r] = reinterpret_cast<const loom::sdk::gguf::BlockQ8_K*>(xq + (t0 + r) * xq_row_bytes);
    s[r] = side + (t0 + r) * nb * loom_gguf::kKQuantSide;
  }
  for (int64_t grp = g0; grp < g1; ++grp) {
    const int64_t j0 = grp * kRows;
    const int64_t n_out = w.n_rows - j0 < kRows ? w.n_rows - j0 : kRows;
    kq_group_rows<F, R>(w.group(grp), nb, a, s, y + t0 * ys + (j0 - g0 * kRows), ys, n_out);
  }
}

// Activation rows [0, n) in register blocks: kR at a time, then (kR > 4) one of 4, then the last
// 1-3; rows.template operator()<R>(t) runs block [t, t + R).
template <int kR, class Rows>
inline __attribute__((always_inline)) void kq_row_blocks(int64_t n, Rows&& rows) {
  int64_t t = 0;
  for (; t + kR <= n; t += kR) rows.template operator()<kR>(t);
  if constexpr (kR > 4) {
    if (n - t >= 4) {
      rows.template operator()<4>(t);
      t += 4;
    }
  }
  switch (n - t) {
    case 3: rows.template operator()<3>(t); break;
    case 2: rows.template operator()<2>(t); break;
    case 1: rows.template operator()<1>(t); break;
    default: break;
  }
}

template <class F>
void kq_gemm_x8(const loom_gguf::PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                const int32_t* side, int64_t n, float* y, int64_t ys) {
  kq_row_blocks<F::kRows>(n, [&]<int R>(int64_t t) { kq_rows_x_groups<F, R>(w, g0, g1, xq, xq_row_bytes, side, t, y, ys); });
}
