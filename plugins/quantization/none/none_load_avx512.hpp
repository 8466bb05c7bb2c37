// How the AVX-512 kernels (none_panel_avx512.cpp, none_decode_avx512.cpp) read 16 weights of a
// panel row as f32, exactly, from f16, bf16 or f32. Included inside each file's anonymous
// namespace and target region, after <immintrin.h> or SIMDe's emulation (LOOM_SIMD_EMULATE).
#pragma once

// 16 weights of a panel row as f32, exactly.
#ifdef LOOM_SIMD_EMULATE
// SIMDe 0.7 has no 512-bit f16/u16 widening; two 256-bit halves through memory give the same
// values.
inline __m512 join(__m256 lo, __m256 hi) {
  alignas(64) float f[16];
  _mm256_store_ps(f, lo);
  _mm256_store_ps(f + 8, hi);
  return _mm512_load_ps(f);
}
struct LoadF16 {
  using T = uint16_t;
  static __m512 vec(const uint16_t* p) {
    return join(_mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p))),
                _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + 8))));
  }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m256 half(const uint16_t* p) {
    const __m256i h = _mm256_cvtepu16_epi32(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
    return _mm256_castsi256_ps(_mm256_slli_epi32(h, 16));
  }
  static __m512 vec(const uint16_t* p) { return join(half(p), half(p + 8)); }
};
#else
struct LoadF16 {
  using T = uint16_t;
  static __m512 vec(const uint16_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
};
struct LoadBF16 {
  using T = uint16_t;
  static __m512 vec(const uint16_t* p) {
    const __m512i h = _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
    return _mm512_castsi512_ps(_mm512_slli_epi32(h, 16));
  }
};
#endif
struct LoadF32 {
  using T = float;
  static __m512 vec(const float* p) { return _mm512_loadu_ps(p); }
};
