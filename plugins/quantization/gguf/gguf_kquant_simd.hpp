// AVX2 helpers of the K-quant kernels (gguf_kernels_kquant_avx2.cpp, _avx512.cpp): included
// inside each file's target region and anonymous namespace, after <immintrin.h> or SIMDe, like
// gguf_x8_gemm.hpp; needs g = loom::sdk::gguf and <cstring>.

inline __attribute__((always_inline)) int32_t hsum_i32(__m256i v) {
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
  return _mm_cvtsi128_si32(s);
}

// The lane sums of two int32 vectors at once: {sum(a), sum(b)}.
inline __attribute__((always_inline)) void hsum2_i32(__m256i a, __m256i b, int32_t* sa, int32_t* sb) {
  const __m256i h = _mm256_hadd_epi32(a, b);  // [a01 a23 b01 b23 | a45 a67 b45 b67]
  __m128i s = _mm_add_epi32(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1));
  s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));  // [a, a, b, b]
  *sa = _mm_cvtsi128_si32(s);
  *sb = _mm_extract_epi32(s, 2);
}

// Each super-block read asks for the one kStreamAhead bytes on (gguf_stream_prefetch.hpp).
template <class W>
inline __attribute__((always_inline)) void prefetch_ahead(const W* block) {
  loom_gguf::stream_prefetch<sizeof(W)>(block);
}

inline __attribute__((always_inline)) float half(uint16_t h) { return _cvtsh_ss(h); }

inline __attribute__((always_inline)) __m256i load(const void* p) {
  return _mm256_loadu_si256(static_cast<const __m256i*>(p));
}

// pshufb masks that spread int16 lane `lo` of a 128-bit lane over the low half of a ymm and lane
// `hi` over the high half: madd's scale operand for 32 values spanning two sub-blocks (kPair[k]:
// lanes 2k, 2k + 1) or inside one (kSame[j]: lane j twice).
struct PickMasks {
  alignas(32) uint8_t pair[4][32];
  alignas(32) uint8_t same[8][32];
};
constexpr PickMasks make_pick_masks() {
  PickMasks m{};
  for (int i = 0; i < 32; ++i) {
    const int half_ = i / 16, byte = i % 2;
    for (int k = 0; k < 4; ++k) m.pair[k][i] = static_cast<uint8_t>(2 * (2 * k + half_) + byte);
    for (int j = 0; j < 8; ++j) m.same[j][i] = static_cast<uint8_t>(2 * j + byte);
  }
  return m;
}
constexpr PickMasks kPick = make_pick_masks();

inline __attribute__((always_inline)) __m256i pick(__m256i v, const uint8_t* mask) {
  return _mm256_shuffle_epi8(v, _mm256_load_si256(reinterpret_cast<const __m256i*>(mask)));
}
// 8 int16 in both 128-bit halves.
inline __attribute__((always_inline)) __m256i both_halves(__m128i v) { return _mm256_broadcastsi128_si256(v); }

// Q5_K's 8 scales (first) and 8 mins as int16 in a 128-bit lane each (q5_k_scale_min for all j):
// unpacked four at a time from the 32-bit words of scales[12].
inline __attribute__((always_inline)) void q5_k_scales_mins(const uint8_t* s, __m128i* scales, __m128i* mins) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  constexpr uint32_t kLow6 = 0x3F3F3F3F, kLow4 = 0x0F0F0F0F, kLow2 = 0x03030303;
  const uint32_t sc_lo = u[0] & kLow6, sc_hi = (u[2] & kLow4) | (((u[0] >> 6) & kLow2) << 4);
  const uint32_t mn_lo = u[1] & kLow6, mn_hi = ((u[2] >> 4) & kLow4) | (((u[1] >> 6) & kLow2) << 4);
  *scales = _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(sc_lo), static_cast<int>(sc_hi), 0, 0));
  *mins = _mm_cvtepu8_epi16(_mm_setr_epi32(static_cast<int>(mn_lo), static_cast<int>(mn_hi), 0, 0));
}

// sum_j m_j * (bsum_2j + bsum_2j+1) as 8 int32 lanes: the mins, each repeated for its two bsums.
inline __attribute__((always_inline)) __m256i q5_k_min_sums(__m128i mins, const int16_t* bsums) {
  const __m256i dup = _mm256_set_m128i(_mm_unpackhi_epi16(mins, mins), _mm_unpacklo_epi16(mins, mins));
  return _mm256_madd_epi16(dup, _mm256_loadu_si256(reinterpret_cast<const __m256i*>(bsums)));
}

// Q3_K's 16 signed scales as int16 (g::q3_k_scale for all s): low nibbles from bytes 0..7 (low
// then high nibble), 2 high bits from bytes 8..11, minus 32.
inline __attribute__((always_inline)) __m256i q3_k_scales(const uint8_t* s) {
  uint32_t u[3];
  std::memcpy(u, s, 12);
  constexpr uint32_t kLow4 = 0x0F0F0F0F, kLow2 = 0x03030303;
  const uint32_t s0 = (u[0] & kLow4) | ((u[2] & kLow2) << 4);
  const uint32_t s1 = (u[1] & kLow4) | (((u[2] >> 2) & kLow2) << 4);
  const uint32_t s2 = ((u[0] >> 4) & kLow4) | (((u[2] >> 4) & kLow2) << 4);
  const uint32_t s3 = ((u[1] >> 4) & kLow4) | (((u[2] >> 6) & kLow2) << 4);
  const __m128i bytes = _mm_sub_epi8(
      _mm_setr_epi32(static_cast<int>(s0), static_cast<int>(s1), static_cast<int>(s2), static_cast<int>(s3)),
      _mm_set1_epi8(32));
  return _mm256_cvtepi8_epi16(bytes);
}

// IQ4_XS's 8 signed scales as int16 (g::iq4_xs_scale for all j): the nibbles of scales_l and the
// 2-bit fields of scales_h spread to one byte each, combined, minus 32.
inline __attribute__((always_inline)) __m128i iq4_xs_scales(const g::BlockIQ4_XS& w) {
  uint32_t l32 = 0;
  std::memcpy(&l32, w.scales_l, 4);
  uint64_t lo = l32;
  lo = (lo | (lo << 16)) & 0x0000FFFF0000FFFFull;
  lo = (lo | (lo << 8)) & 0x00FF00FF00FF00FFull;
  lo = (lo | (lo << 4)) & 0x0F0F0F0F0F0F0F0Full;
  uint64_t hi = w.scales_h;
  hi = (hi | (hi << 24)) & 0x000000FF000000FFull;
  hi = (hi | (hi << 12)) & 0x000F000F000F000Full;
  hi = (hi | (hi << 6)) & 0x0303030303030303ull;
  const __m128i bytes = _mm_cvtsi64_si128(static_cast<long long>(lo | (hi << 4)));
  return _mm_cvtepi8_epi16(_mm_sub_epi8(bytes, _mm_set1_epi8(32)));
}

// The end of a super-block for R activation rows: acc[r] holds row r's scaled code sums as int32
// lanes; min_sums(bsums) gives its min sums (formats with mins). The float fold is the portable
// kernels' expression, so the bits match them.
template <int R, class MinSums>
inline __attribute__((always_inline)) void fold_with_mins(float* sum, const __m256i* acc, MinSums min_sums,
                                                          uint16_t d16, uint16_t dmin16, const g::BlockQ8_K* const* a,
                                                          int64_t b) {
  const float d = half(d16), dmin = half(dmin16);
  for (int r = 0; r < R; ++r) {
    int32_t isum = 0, msum = 0;
    hsum2_i32(acc[r], min_sums(a[r][b].bsums), &isum, &msum);
    sum[r] += (d * a[r][b].d) * static_cast<float>(isum) - (dmin * a[r][b].d) * static_cast<float>(msum);
  }
}
template <int R>
inline __attribute__((always_inline)) void fold(float* sum, const __m256i* acc, uint16_t d16,
                                                const g::BlockQ8_K* const* a, int64_t b) {
  const float d = half(d16);
  for (int r = 0; r < R; ++r) sum[r] += (d * a[r][b].d) * static_cast<float>(hsum_i32(acc[r]));
}

// The tile of a file: prefill takes 4 activation rows per unpacked weight super-block (registers
// for 4 accumulators), decode one.
constexpr int kRows = 4;
template <class W, void (*DotRows)(const W*, const g::BlockQ8_K* const*, int64_t, float*),
          void (*Dot1)(const W*, const g::BlockQ8_K* const*, int64_t, float*)>
constexpr loom_gguf::TileKernel tile = &loom_gguf::kquant_tile_rows<W, kRows, DotRows, Dot1>;
