// SDK: the GGUF (ggml) block-quantized formats Q8_0, Q4_0, Q4_K, Q6_K and the Q8_K activation
// blocks: their exact byte layouts, a reference (round-to-nearest) quantizer and the dequantizer
// of each. Header-only, shared by the gguf quantization plugin, the core's embedding lookup and
// loom-convert, so all three agree on every bit.
//
// Layouts (little-endian, packed, as ggml stores them):
//   Q8_0  32 values,  34 bytes: f16 d, int8 q[32];                 x = d * q
//   Q4_0  32 values,  18 bytes: f16 d, u8 qs[16];                  x = d * (nibble - 8)
//         value j < 16 is the low nibble of qs[j], value j + 16 its high nibble
//   Q4_K 256 values, 144 bytes: f16 d, f16 dmin, u8 scales[12], u8 qs[128]
//         8 sub-blocks of 32 with 6-bit scale sc and min m each:    x = d*sc*q - dmin*m
//         64-value chunk c: qs[32c + l] holds value 64c + l (low nibble) and 64c + 32 + l (high)
//   Q6_K 256 values, 210 bytes: u8 ql[128], u8 qh[64], int8 scales[16], f16 d
//         16 sub-blocks of 16 with int8 scale sc:                   x = d * sc * (q6 - 32)
//   Q8_K 256 values, 292 bytes: f32 d, int8 q[256], int16 bsums[16] (sum of each 16 values);
//         used for activations only (never stored in a model file).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "loom/sdk_gguf_kquants.hpp"
#include "loom/sdk_gguf_legacy.hpp"  // Q4_1, Q5_0, Q5_1, IQ4_NL, Q8_1
#include "loom/sdk_half.hpp"

namespace loom::sdk::gguf {

constexpr int kQK = 32;    // values per Q8_0 / Q4_0 block
constexpr int kQKK = 256;  // values per K-quant super-block

struct BlockQ8_0 {
  uint16_t d;  // f16
  int8_t qs[kQK];
};
struct BlockQ4_0 {
  uint16_t d;  // f16
  uint8_t qs[kQK / 2];
};
struct BlockQ4_K {
  uint16_t d;     // f16, scale of the 6-bit sub-block scales
  uint16_t dmin;  // f16, scale of the 6-bit sub-block mins
  uint8_t scales[12];
  uint8_t qs[kQKK / 2];
};
struct BlockQ6_K {
  uint8_t ql[kQKK / 2];  // low 4 bits
  uint8_t qh[kQKK / 4];  // high 2 bits
  int8_t scales[kQKK / 16];
  uint16_t d;  // f16
};
struct BlockQ8_K {
  float d;
  int8_t qs[kQKK];
  int16_t bsums[kQKK / 16];
};

static_assert(sizeof(BlockQ8_0) == 34 && sizeof(BlockQ4_0) == 18 && sizeof(BlockQ4_K) == 144 &&
                  sizeof(BlockQ6_K) == 210 && sizeof(BlockQ8_K) == 292,
              "GGUF block layouts must match ggml's byte for byte");

inline int nearest_int(float v) { return static_cast<int>(std::lrintf(v)); }

// ---- Q8_0 -------------------------------------------------------------------------------------

// x: [n_blocks * 32]. d = max|x| / 127, q = round(x / d).
inline void quantize_q8_0(const float* x, BlockQ8_0* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK) {
    float amax = 0;
    for (int j = 0; j < kQK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK; ++j) y[b].qs[j] = static_cast<int8_t>(nearest_int(x[j] * id));
  }
}

inline void dequantize_q8_0(const BlockQ8_0* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK; ++j) y[b * kQK + j] = d * static_cast<float>(x[b].qs[j]);
  }
}

// ---- Q4_0 -------------------------------------------------------------------------------------

// The value of largest magnitude maps to -8 exactly (d = max / -8), so its sign sets d's sign
// and the whole [-8, 7] range is used.
inline void quantize_q4_0(const float* x, BlockQ4_0* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQK) {
    float amax = 0, max = 0;
    for (int j = 0; j < kQK; ++j) {
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -8.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kQK / 2; ++j) {
      const int lo = std::clamp(nearest_int(x[j] * id) + 8, 0, 15);
      const int hi = std::clamp(nearest_int(x[j + kQK / 2] * id) + 8, 0, 15);
      y[b].qs[j] = static_cast<uint8_t>(lo | (hi << 4));
    }
  }
}

inline void dequantize_q4_0(const BlockQ4_0* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kQK / 2; ++j) {
      y[b * kQK + j] = d * static_cast<float>((x[b].qs[j] & 0xF) - 8);
      y[b * kQK + j + kQK / 2] = d * static_cast<float>((x[b].qs[j] >> 4) - 8);
    }
  }
}

// ---- Q4_K -------------------------------------------------------------------------------------

// Sub-block j's (scale, min) codes, 6 bits each: j < 4 in the low 6 bits of scales[j] and
// scales[j + 4]; j >= 4 split into a low nibble in scales[j + 4] and 2 high bits on top of
// scales[j - 4] (scale) and scales[j] (min).
inline void q4_k_scale_min(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

inline void q4_k_set_scale_min(int j, uint8_t* s, int sc, int m) {
  if (j < 4) {
    s[j] = static_cast<uint8_t>((s[j] & 0xC0) | sc);
    s[j + 4] = static_cast<uint8_t>((s[j + 4] & 0xC0) | m);
  } else {
    s[j + 4] = static_cast<uint8_t>((sc & 0xF) | ((m & 0xF) << 4));
    s[j - 4] = static_cast<uint8_t>((s[j - 4] & 0x3F) | ((sc >> 4) << 6));
    s[j] = static_cast<uint8_t>((s[j] & 0x3F) | ((m >> 4) << 6));
  }
}

// Per sub-block: min = min(0, smallest value), scale = (largest - min) / 15; the 8 scales and the
// 8 mins are then coded in 6 bits against their own maxima (d, dmin), and every value rounded
// to the nearest of the 16 levels the coded (scale, min) give.
inline void quantize_q4_k(const float* x, BlockQ4_K* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    float scale[8], min[8], max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float lo = 0, hi = -INFINITY;
      for (int l = 0; l < 32; ++l) {
        lo = std::min(lo, x[32 * j + l]);
        hi = std::max(hi, x[32 * j + l]);
      }
      scale[j] = (hi - lo) / 15.0f;
      min[j] = -lo;
      max_scale = std::max(max_scale, scale[j]);
      max_min = std::max(max_min, min[j]);
    }
    BlockQ4_K& o = y[b];
    std::memset(&o, 0, sizeof(o));
    const float d = max_scale / 63.0f, dmin = max_min / 63.0f;
    o.d = f32_to_f16(d);
    o.dmin = f32_to_f16(dmin);
    const float dq = f16_to_f32(o.d), dminq = f16_to_f32(o.dmin);
    uint8_t q[kQKK];
    for (int j = 0; j < 8; ++j) {
      const int sc = dq != 0 ? std::clamp(nearest_int(scale[j] / dq), 0, 63) : 0;
      const int m = dminq != 0 ? std::clamp(nearest_int(min[j] / dminq), 0, 63) : 0;
      q4_k_set_scale_min(j, o.scales, sc, m);
      const float step = dq * static_cast<float>(sc), offset = dminq * static_cast<float>(m);
      for (int l = 0; l < 32; ++l) {
        const int v = step != 0 ? nearest_int((x[32 * j + l] + offset) / step) : 0;
        q[32 * j + l] = static_cast<uint8_t>(std::clamp(v, 0, 15));
      }
    }
    for (int c = 0; c < 4; ++c)
      for (int l = 0; l < 32; ++l)
        o.qs[32 * c + l] = static_cast<uint8_t>(q[64 * c + l] | (q[64 * c + 32 + l] << 4));
  }
}

inline void dequantize_q4_k(const BlockQ4_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      q4_k_scale_min(j, x[b].scales, &sc, &m);
      const float step = d * static_cast<float>(sc), offset = dmin * static_cast<float>(m);
      const uint8_t* qs = x[b].qs + 32 * (j / 2);
      for (int l = 0; l < 32; ++l) {
        const int q = (j % 2 == 0) ? (qs[l] & 0xF) : (qs[l] >> 4);
        y[b * kQKK + 32 * j + l] = step * static_cast<float>(q) - offset;
      }
    }
  }
}

// ---- Q6_K -------------------------------------------------------------------------------------

// The 6-bit code (0..63) of value e of a Q6_K block. In each 128-value half h, value
// 128h + 32k + l (k < 4, l < 32) keeps its low nibble in ql[64h + l + 32*(k%2)] (low nibble for
// k < 2, high for k >= 2) and its 2 high bits at bit 2k of qh[32h + l].
inline int q6_k_code(const BlockQ6_K& blk, int e) {
  const int h = e / 128, k = (e % 128) / 32, l = e % 32;
  const uint8_t lo = blk.ql[64 * h + l + 32 * (k % 2)];
  const int low = k < 2 ? (lo & 0xF) : (lo >> 4);
  return low | (((blk.qh[32 * h + l] >> (2 * k)) & 3) << 4);
}

// Per 16-value sub-block: scale = (signed value of largest magnitude) / -32, so that value maps
// to code 0 (q = -32); the 16 scales are coded as int8 against d = max|scale| / 127.
inline void quantize_q6_k(const float* x, BlockQ6_K* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    float scale[16], max_abs_scale = 0, max_scale = 0;
    for (int s = 0; s < 16; ++s) {
      float amax = 0, max = 0;
      for (int l = 0; l < 16; ++l) {
        if (std::fabs(x[16 * s + l]) > amax) {
          amax = std::fabs(x[16 * s + l]);
          max = x[16 * s + l];
        }
      }
      scale[s] = max / -32.0f;
      if (std::fabs(scale[s]) > max_abs_scale) {
        max_abs_scale = std::fabs(scale[s]);
        max_scale = scale[s];
      }
    }
    BlockQ6_K& o = y[b];
    std::memset(&o, 0, sizeof(o));
    const float d = max_scale / -128.0f;  // so the largest scale codes as -128 or 127 at most
    o.d = f32_to_f16(d);
    const float dq = f16_to_f32(o.d);
    for (int s = 0; s < 16; ++s) {
      const int sc = dq != 0 ? std::clamp(nearest_int(scale[s] / dq), -128, 127) : 0;
      o.scales[s] = static_cast<int8_t>(sc);
      const float step = dq * static_cast<float>(sc);
      for (int l = 0; l < 16; ++l) {
        const int e = 16 * s + l;
        const int q = step != 0 ? std::clamp(nearest_int(x[e] / step), -32, 31) + 32 : 32;
        const int h = e / 128, k = (e % 128) / 32, i = e % 32;
        uint8_t& lo = o.ql[64 * h + i + 32 * (k % 2)];
        lo = static_cast<uint8_t>(lo | ((q & 0xF) << (k < 2 ? 0 : 4)));
        o.qh[32 * h + i] = static_cast<uint8_t>(o.qh[32 * h + i] | ((q >> 4) << (2 * k)));
      }
    }
  }
}

inline void dequantize_q6_k(const BlockQ6_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int e = 0; e < kQKK; ++e)
      y[b * kQKK + e] = d * static_cast<float>(x[b].scales[e / 16]) * static_cast<float>(q6_k_code(x[b], e) - 32);
  }
}

// ---- Q8_K (activations) -----------------------------------------------------------------------

inline void quantize_q8_k(const float* x, BlockQ8_K* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kQKK) {
    float amax = 0;
    for (int j = 0; j < kQKK; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = d;
    for (int s = 0; s < kQKK / 16; ++s) {
      int sum = 0;
      for (int l = 0; l < 16; ++l) {
        const int q = std::clamp(nearest_int(x[16 * s + l] * id), -127, 127);
        y[b].qs[16 * s + l] = static_cast<int8_t>(q);
        sum += q;
      }
      y[b].bsums[s] = static_cast<int16_t>(sum);
    }
  }
}

inline void dequantize_q8_k(const BlockQ8_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b)
    for (int j = 0; j < kQKK; ++j) y[b * kQKK + j] = x[b].d * static_cast<float>(x[b].qs[j]);
}

// ---- By dtype number (ggml_type: Q4_0 = 2, Q8_0 = 8, Q4_K = 12, Q6_K = 14; sdk_gguf_legacy.hpp:
// Q4_1 = 3, Q5_0 = 6, Q5_1 = 7, IQ4_NL = 20; sdk_gguf_kquants.hpp: Q2_K = 10, Q3_K = 11, Q5_K = 13,
// IQ4_XS = 23) -------------------------------------------------------------------------------------

// Values per block and bytes per block of a format this header knows; {0, 0} otherwise.
struct BlockGeometry {
  int64_t values;
  int64_t bytes;
};
inline BlockGeometry block_geometry(int dtype) {
  switch (dtype) {
    case 2: return {kQK, sizeof(BlockQ4_0)};
    case 8: return {kQK, sizeof(BlockQ8_0)};
    case 12: return {kQKK, sizeof(BlockQ4_K)};
    case 14: return {kQKK, sizeof(BlockQ6_K)};
    case 10: return {kQKK, sizeof(BlockQ2_K)};
    case 11: return {kQKK, sizeof(BlockQ3_K)};
    case 13: return {kQKK, sizeof(BlockQ5_K)};
    case 23: return {kQKK, sizeof(BlockIQ4_XS)};
    case 3: return {kQK, sizeof(BlockQ4_1)};
    case 6: return {kQK, sizeof(BlockQ5_0)};
    case 7: return {kQK, sizeof(BlockQ5_1)};
    case 20: return {kQK, sizeof(BlockIQ4_NL)};
    default: return {0, 0};
  }
}

// n values (a multiple of the block size) of a row stored as `dtype` -> f32. False when this
// header does not know the dtype.
inline bool dequantize_row(int dtype, const void* blocks, float* y, int64_t n) {
  switch (dtype) {
    case 2: dequantize_q4_0(static_cast<const BlockQ4_0*>(blocks), y, n / kQK); return true;
    case 8: dequantize_q8_0(static_cast<const BlockQ8_0*>(blocks), y, n / kQK); return true;
    case 12: dequantize_q4_k(static_cast<const BlockQ4_K*>(blocks), y, n / kQKK); return true;
    case 14: dequantize_q6_k(static_cast<const BlockQ6_K*>(blocks), y, n / kQKK); return true;
    case 10: dequantize_q2_k(static_cast<const BlockQ2_K*>(blocks), y, n / kQKK); return true;
    case 11: dequantize_q3_k(static_cast<const BlockQ3_K*>(blocks), y, n / kQKK); return true;
    case 13: dequantize_q5_k(static_cast<const BlockQ5_K*>(blocks), y, n / kQKK); return true;
    case 23: dequantize_iq4_xs(static_cast<const BlockIQ4_XS*>(blocks), y, n / kQKK); return true;
    case 3: dequantize_q4_1(static_cast<const BlockQ4_1*>(blocks), y, n / kQK); return true;
    case 6: dequantize_q5_0(static_cast<const BlockQ5_0*>(blocks), y, n / kQK); return true;
    case 7: dequantize_q5_1(static_cast<const BlockQ5_1*>(blocks), y, n / kQK); return true;
    case 20: dequantize_iq4_nl(static_cast<const BlockIQ4_NL*>(blocks), y, n / kQK); return true;
    default: return false;
  }
}

// f32 -> n values of `dtype` (n a multiple of its block size) written to `blocks`.
inline bool quantize_row(int dtype, const float* x, void* blocks, int64_t n) {
  switch (dtype) {
    case 2: quantize_q4_0(x, static_cast<BlockQ4_0*>(blocks), n / kQK); return true;
    case 8: quantize_q8_0(x, static_cast<BlockQ8_0*>(blocks), n / kQK); return true;
    case 12: quantize_q4_k(x, static_cast<BlockQ4_K*>(blocks), n / kQKK); return true;
    case 14: quantize_q6_k(x, static_cast<BlockQ6_K*>(blocks), n / kQKK); return true;
    case 10: quantize_q2_k(x, static_cast<BlockQ2_K*>(blocks), n / kQKK); return true;
    case 11: quantize_q3_k(x, static_cast<BlockQ3_K*>(blocks), n / kQKK); return true;
    case 13: quantize_q5_k(x, static_cast<BlockQ5_K*>(blocks), n / kQKK); return true;
    case 23: quantize_iq4_xs(x, static_cast<BlockIQ4_XS*>(blocks), n / kQKK); return true;
    case 3: quantize_q4_1(x, static_cast<BlockQ4_1*>(blocks), n / kQK); return true;
    case 6: quantize_q5_0(x, static_cast<BlockQ5_0*>(blocks), n / kQK); return true;
    case 7: quantize_q5_1(x, static_cast<BlockQ5_1*>(blocks), n / kQK); return true;
    case 20: quantize_iq4_nl(x, static_cast<BlockIQ4_NL*>(blocks), n / kQK); return true;
    default: return false;
  }
}

}  // namespace loom::sdk::gguf
