// SDK: the GGUF (ggml) 256-value super-block formats Q2_K, Q3_K, Q5_K and IQ4_XS: their byte
// layouts, the accessors the kernels and dequantizers share, llama.cpp's reference quantizers
// (quantize_row_*_ref, no importance matrix; their searches are in sdk_gguf_kquant_search.hpp)
// and the dequantizers. Each type pairs with Q8_K activations
// (sdk_gguf_blocks.hpp). Header-only and standalone; sdk_gguf_blocks.hpp includes it and
// dispatches to it by dtype number.
//
// The quantizers repeat llama.cpp's float arithmetic operation for operation (same order, no
// fused multiply-adds: the includer's targets build with -ffp-contract=off or without FMA), so a
// tensor quantized here has the bytes llama.cpp's quantize_row_*_ref gives it;
// tests/conformance checks both directions against vectors made from llama.cpp
// (tools/convert/gguf_kquant_vectors.py).
//
// Layouts (little-endian, packed, as ggml stores them); value e of a super-block:
//   Q2_K   84 bytes: u8 scales[16], u8 qs[64], f16 d, f16 dmin
//          16 sub-blocks of 16; scales[s] = sc (low nibble) | m << 4:  x = d*sc*q - dmin*m
//          q (0..3) of e = 128h + 32k + l is bits 2k..2k+1 of qs[32h + l]
//   Q3_K  110 bytes: u8 hmask[32], u8 qs[64], u8 scales[12], f16 d
//          16 sub-blocks of 16, 6-bit scale sc (stored + 32):          x = d*(sc - 32)*(q - 4)
//          q's low 2 bits as Q2_K's, its bit 2 is bit e / 32 of hmask[e % 32]
//   Q5_K  176 bytes: f16 d, f16 dmin, u8 scales[12], u8 qh[32], u8 qs[128]
//          Q4_K's 8 sub-blocks of 32 and scale packing (q4_k_scale_min), 5-bit q:
//          low 4 bits as Q4_K's nibbles, bit 4 of e = 32j + l is bit j of qh[l]
//   IQ4_XS 136 bytes: f16 d, u16 scales_h, u8 scales_l[4], u8 qs[128]
//          8 sub-blocks of 32, 6-bit scale ls (stored + 32):            x = d*(ls - 32)*kIQ4NL[q]
//          ls of sub-block j: nibble j % 2 of scales_l[j / 2] | bits 2j..2j+1 of scales_h << 4
//          q of 32j + l: low nibble of qs[16j + l] (l < 16), high nibble of qs[16j + l - 16]
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "loom/sdk_gguf_kquant_search.hpp"
#include "loom/sdk_half.hpp"

namespace loom::sdk::gguf {


struct BlockQ2_K {
  uint8_t scales[16];  // sc | m << 4 per 16-value sub-block
  uint8_t qs[64];      // 2-bit codes
  uint16_t d;          // f16, scale of the sc
  uint16_t dmin;       // f16, scale of the m
};
struct BlockQ3_K {
  uint8_t hmask[32];   // bit 2 of each code
  uint8_t qs[64];      // bits 0..1 of each code
  uint8_t scales[12];  // 16 6-bit scales, + 32
  uint16_t d;          // f16
};
struct BlockQ5_K {
  uint16_t d;     // f16, scale of the 6-bit sub-block scales
  uint16_t dmin;  // f16, scale of the 6-bit sub-block mins
  uint8_t scales[12];
  uint8_t qh[32];   // bit 4 of each code
  uint8_t qs[128];  // bits 0..3 of each code
};
struct BlockIQ4_XS {
  uint16_t d;  // f16
  uint16_t scales_h;
  uint8_t scales_l[4];
  uint8_t qs[128];  // indices into kIQ4NL
};
static_assert(sizeof(BlockQ2_K) == 84 && sizeof(BlockQ3_K) == 110 && sizeof(BlockQ5_K) == 176 &&
                  sizeof(BlockIQ4_XS) == 136,
              "GGUF K-quant layouts must match ggml's byte for byte");

// ---- Accessors: codes and scales of value e / sub-block j -------------------------------------

inline int q2_k_code(const BlockQ2_K& b, int e) {
  return (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
}

// 0..7; the value is d * scale * (code - 4).
inline int q3_k_code(const BlockQ3_K& b, int e) {
  const int low = (b.qs[32 * (e / 128) + e % 32] >> (2 * ((e % 128) / 32))) & 3;
  return low | (((b.hmask[e % 32] >> (e / 32)) & 1) << 2);
}
// -32..31: low nibble in scales[j % 8] (low half for j < 8), 2 high bits at bit 2 (j / 4) of
// scales[8 + j % 4].
inline int q3_k_scale(const BlockQ3_K& b, int j) {
  const int low = j < 8 ? (b.scales[j] & 0xF) : (b.scales[j - 8] >> 4);
  return (low | (((b.scales[8 + j % 4] >> (2 * (j / 4))) & 3) << 4)) - 32;
}

// 0..31: Q4_K's nibble order (chunk c = e / 64 in qs[32c..], low nibble first) plus qh's bit.
inline int q5_k_code(const BlockQ5_K& b, int e) {
  const int c = e / 64, l = e % 32, hi_nibble = (e % 64) / 32;
  const int low = (b.qs[32 * c + l] >> (4 * hi_nibble)) & 0xF;
  return low | (((b.qh[l] >> (e / 32)) & 1) << 4);
}
// Sub-block j's 6-bit (scale, min) codes: Q4_K's packing.
inline void q5_k_scale_min(int j, const uint8_t* s, int* sc, int* m) {
  if (j < 4) {
    *sc = s[j] & 63;
    *m = s[j + 4] & 63;
  } else {
    *sc = (s[j + 4] & 0xF) | ((s[j - 4] >> 6) << 4);
    *m = (s[j + 4] >> 4) | ((s[j] >> 6) << 4);
  }
}

inline int iq4_xs_code(const BlockIQ4_XS& b, int e) {
  const int j = e / 32, l = e % 32;
  return l < 16 ? (b.qs[16 * j + l] & 0xF) : (b.qs[16 * j + l - 16] >> 4);
}
// -32..31.
inline int iq4_xs_scale(const BlockIQ4_XS& b, int j) {
  return (((b.scales_l[j / 2] >> (4 * (j % 2))) & 0xF) | (((b.scales_h >> (2 * j)) & 3) << 4)) - 32;
}

// ---- Dequantizers (llama.cpp's dequantize_row_*: the same products in the same order) ---------

inline void dequantize_q2_k(const BlockQ2_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kquant::kValues) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int e = 0; e < kquant::kValues; ++e) {
      const uint8_t sc = x[b].scales[e / 16];
      const float dl = d * static_cast<float>(sc & 0xF), ml = dmin * static_cast<float>(sc >> 4);
      y[e] = dl * static_cast<float>(q2_k_code(x[b], e)) - ml;
    }
  }
}

inline void dequantize_q3_k(const BlockQ3_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kquant::kValues) {
    const float d = f16_to_f32(x[b].d);
    for (int e = 0; e < kquant::kValues; ++e)
      y[e] = (d * static_cast<float>(q3_k_scale(x[b], e / 16))) * static_cast<float>(q3_k_code(x[b], e) - 4);
  }
}

inline void dequantize_q5_k(const BlockQ5_K* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kquant::kValues) {
    const float d = f16_to_f32(x[b].d), dmin = f16_to_f32(x[b].dmin);
    for (int e = 0; e < kquant::kValues; ++e) {
      int sc = 0, m = 0;
      q5_k_scale_min(e / 32, x[b].scales, &sc, &m);
      y[e] = (d * static_cast<float>(sc)) * static_cast<float>(q5_k_code(x[b], e)) - dmin * static_cast<float>(m);
    }
  }
}

inline void dequantize_iq4_xs(const BlockIQ4_XS* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, y += kquant::kValues) {
    const float d = f16_to_f32(x[b].d);
    for (int e = 0; e < kquant::kValues; ++e)
      y[e] = (d * static_cast<float>(iq4_xs_scale(x[b], e / 32))) * static_cast<float>(kIQ4NL[iq4_xs_code(x[b], e)]);
  }
}


// ---- Quantizers (quantize_row_*_ref) ----------------------------------------------------------

// Per 16-value sub-block an asymmetric 2-bit fit (weights |x|, mean absolute error); the 16
// scales and 16 mins are coded in 4 bits against their maxima, and every value re-rounded to the
// levels the coded (scale, min) give.
inline void quantize_q2_k(const float* x, BlockQ2_K* y, int64_t n_blocks) {
  using namespace kquant;
  constexpr float kQ4Scale = 15.0f;
  for (int64_t b = 0; b < n_blocks; ++b, x += kValues) {
    uint8_t L[kValues], aux[16];
    float weights[16], mins[16], scales[16];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 16; ++j) {
      for (int l = 0; l < 16; ++l) weights[l] = std::fabs(x[16 * j + l]);
      scales[j] = qkx2_search(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], aux, -0.5f, 0.1f, 15, true);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    BlockQ2_K& o = y[b];
    if (max_scale > 0) {
      const float iscale = kQ4Scale / max_scale;
      for (int j = 0; j < 16; ++j) o.scales[j] = static_cast<uint8_t>(round_int(iscale * scales[j]));
      o.d = f32_to_f16(max_scale / kQ4Scale);
    } else {
      for (int j = 0; j < 16; ++j) o.scales[j] = 0;
      o.d = f32_to_f16(0.0f);
    }
    if (max_min > 0) {
      const float iscale = kQ4Scale / max_min;
      for (int j = 0; j < 16; ++j) o.scales[j] = static_cast<uint8_t>(o.scales[j] | (round_int(iscale * mins[j]) << 4));
      o.dmin = f32_to_f16(max_min / kQ4Scale);
    } else {
      o.dmin = f32_to_f16(0.0f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(o.d) * static_cast<float>(o.scales[j] & 0xF);
      if (d == 0) continue;  // keeps the search's codes, as llama.cpp does
      const float dm = f16_to_f32(o.dmin) * static_cast<float>(o.scales[j] >> 4);
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] = static_cast<uint8_t>(clamp_int(round_int((x[16 * j + i] + dm) / d), 0, 3));
    }
    pack_2bit(L, o.qs);
  }
}

// Per 16-value sub-block a symmetric 3-bit fit (q3_search); the signed scales coded in 6 bits
// against the one of largest magnitude (d = that scale / -32), values re-rounded to the coded
// scales.
inline void quantize_q3_k(const float* x, BlockQ3_K* y, int64_t n_blocks) {
  using namespace kquant;
  for (int64_t b = 0; b < n_blocks; ++b, x += kValues) {
    int8_t L[kValues];
    float scales[16];
    float max_scale = 0, amax = 0;
    for (int j = 0; j < 16; ++j) {
      scales[j] = q3_search(16, 4, x + 16 * j, L + 16 * j);
      const float scale = std::fabs(scales[j]);
      if (scale > amax) {
        amax = scale;
        max_scale = scales[j];
      }
    }
    BlockQ3_K& o = y[b];
    std::memset(o.scales, 0, sizeof(o.scales));
    if (max_scale != 0) {
      const float iscale = -32.0f / max_scale;
      for (int j = 0; j < 16; ++j) {
        // ggml keeps the rounded scale in an int8 first; every value here fits one.
        const int l = clamp_int(static_cast<int8_t>(round_int(iscale * scales[j])), -32, 31) + 32;
        if (j < 8) {
          o.scales[j] = static_cast<uint8_t>(l & 0xF);
        } else {
          o.scales[j - 8] = static_cast<uint8_t>(o.scales[j - 8] | ((l & 0xF) << 4));
        }
        o.scales[j % 4 + 8] = static_cast<uint8_t>(o.scales[j % 4 + 8] | ((l >> 4) << (2 * (j / 4))));
      }
      o.d = f32_to_f16(1 / iscale);
    } else {
      o.d = f32_to_f16(0.0f);
    }
    for (int j = 0; j < 16; ++j) {
      const float d = f16_to_f32(o.d) * static_cast<float>(q3_k_scale(o, j));
      if (d == 0) continue;
      for (int i = 0; i < 16; ++i)
        L[16 * j + i] = static_cast<int8_t>(clamp_int(round_int(x[16 * j + i] / d), -4, 3) + 4);
    }
    std::memset(o.hmask, 0, sizeof(o.hmask));
    uint8_t low[kValues];
    for (int e = 0; e < kValues; ++e) {
      int l = L[e];
      if (l > 3) {
        o.hmask[e % 32] = static_cast<uint8_t>(o.hmask[e % 32] | (1 << (e / 32)));
        l -= 4;
      }
      low[e] = static_cast<uint8_t>(l);
    }
    pack_2bit(low, o.qs);
  }
}

// Per 32-value sub-block an asymmetric 5-bit fit (weights rms(x) + |x|, squared error); scales
// and mins coded in 6 bits against their maxima (Q4_K's packing), values re-rounded.
inline void quantize_q5_k(const float* x, BlockQ5_K* y, int64_t n_blocks) {
  using namespace kquant;
  for (int64_t b = 0; b < n_blocks; ++b, x += kValues) {
    uint8_t L[kValues], aux[32];
    float weights[32], mins[8], scales[8];
    float max_scale = 0, max_min = 0;
    for (int j = 0; j < 8; ++j) {
      float sum_x2 = 0;
      for (int l = 0; l < 32; ++l) sum_x2 += x[32 * j + l] * x[32 * j + l];
      const float av_x = std::sqrt(sum_x2 / 32);
      for (int l = 0; l < 32; ++l) weights[l] = av_x + std::fabs(x[32 * j + l]);
      scales[j] = qkx2_search(32, 31, x + 32 * j, weights, L + 32 * j, &mins[j], aux, -0.5f, 0.1f, 15, false);
      if (scales[j] > max_scale) max_scale = scales[j];
      if (mins[j] > max_min) max_min = mins[j];
    }
    BlockQ5_K& o = y[b];
    const float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
    const float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
    for (int j = 0; j < 8; ++j) {
      // ggml stores the rounded code in a uint8 before the min(63, .): a negative one wraps high.
      uint8_t ls = static_cast<uint8_t>(round_int(inv_scale * scales[j]));
      uint8_t lm = static_cast<uint8_t>(round_int(inv_min * mins[j]));
      ls = ls < 63 ? ls : 63;
      lm = lm < 63 ? lm : 63;
      if (j < 4) {
        o.scales[j] = ls;
        o.scales[j + 4] = lm;
      } else {
        o.scales[j + 4] = static_cast<uint8_t>((ls & 0xF) | ((lm & 0xF) << 4));
        o.scales[j - 4] = static_cast<uint8_t>(o.scales[j - 4] | ((ls >> 4) << 6));
        o.scales[j] = static_cast<uint8_t>(o.scales[j] | ((lm >> 4) << 6));
      }
    }
    o.d = f32_to_f16(max_scale / 63.0f);
    o.dmin = f32_to_f16(max_min / 63.0f);
    for (int j = 0; j < 8; ++j) {
      int sc = 0, m = 0;
      q5_k_scale_min(j, o.scales, &sc, &m);
      const float d = f16_to_f32(o.d) * static_cast<float>(sc);
      if (d == 0) continue;
      const float dm = f16_to_f32(o.dmin) * static_cast<float>(m);
      for (int i = 0; i < 32; ++i)
        L[32 * j + i] = static_cast<uint8_t>(clamp_int(round_int((x[32 * j + i] + dm) / d), 0, 31));
    }
    std::memset(o.qh, 0, sizeof(o.qh));
    for (int c = 0; c < 4; ++c) {
      for (int l = 0; l < 32; ++l) {
        int lo = L[64 * c + l], hi = L[64 * c + 32 + l];
        if (lo > 15) {
          lo -= 16;
          o.qh[l] = static_cast<uint8_t>(o.qh[l] | (1 << (2 * c)));
        }
        if (hi > 15) {
          hi -= 16;
          o.qh[l] = static_cast<uint8_t>(o.qh[l] | (2 << (2 * c)));
        }
        o.qs[32 * c + l] = static_cast<uint8_t>(lo | (hi << 4));
      }
    }
  }
}

// Per 32-value sub-block (weights x^2) the best of 15 scales that put the value of largest
// magnitude near level -127 (quantize_row_iq4_nl_impl, ntry 7, no importance matrix); the
// scales coded in 6 bits against d = (scale of largest magnitude) / -32, and every value
// re-rounded to the nearest level under its coded scale.
inline void quantize_iq4_xs(const float* x, BlockIQ4_XS* y, int64_t n_blocks) {
  using namespace kquant;
  constexpr int kTry = 7;
  const float v0 = static_cast<float>(kIQ4NL[0]);
  for (int64_t b = 0; b < n_blocks; ++b, x += kValues) {
    uint8_t L[kValues];
    float scales[8];
    float max_scale = 0, amax_scale = 0;
    for (int ib = 0; ib < 8; ++ib) {
      const float* xb = x + 32 * ib;
      float weight[32];
      for (int j = 0; j < 32; ++j) weight[j] = xb[j] * xb[j];
      float amax = 0, max = 0;
      for (int j = 0; j < 32; ++j) {
        const float ax = std::fabs(xb[j]);
        if (ax > amax) {
          amax = ax;
          max = xb[j];
        }
      }
      if (amax < kGroupMaxEps) {
        scales[ib] = 0;
        continue;
      }
      float d = -max / v0;
      float id = 1 / d;
      float sumqx = 0, sumq2 = 0;
      for (int j = 0; j < 32; ++j) {
        const float q = static_cast<float>(kIQ4NL[iq4_nearest(id * xb[j])]);
        sumqx += weight[j] * q * xb[j];
        sumq2 += weight[j] * q * q;
      }
      d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
      float best = d * sumqx;
      for (int itry = -kTry; itry <= kTry; ++itry) {
        id = static_cast<float>(itry + kIQ4NL[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; ++j) {
          const float q = static_cast<float>(kIQ4NL[iq4_nearest(id * xb[j])]);
          sumqx += weight[j] * q * xb[j];
          sumq2 += weight[j] * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          d = sumqx / sumq2;
          best = d * sumqx;
        }
      }
      scales[ib] = d;
      if (std::fabs(d) > amax_scale) {
        amax_scale = std::fabs(d);
        max_scale = d;
      }
    }
    BlockIQ4_XS& o = y[b];
    o.scales_h = 0;
    const float d = -max_scale / 32;  // -0.0 for an all-zero block, as in ggml
    o.d = f32_to_f16(d);
    const float id = d != 0 ? 1 / d : 0.0f;  // the unrounded d, as in ggml
    for (int ib = 0; ib < 8; ++ib) {
      const int l = clamp_int(round_int(id * scales[ib]), -32, 31);
      const float dl = d * static_cast<float>(l);
      const float idl = dl != 0 ? 1 / dl : 0.0f;
      for (int j = 0; j < 32; ++j) L[32 * ib + j] = static_cast<uint8_t>(iq4_nearest(idl * x[32 * ib + j]));
      const int code = l + 32;
      if (ib % 2 == 0) {
        o.scales_l[ib / 2] = static_cast<uint8_t>(code & 0xF);
      } else {
        o.scales_l[ib / 2] = static_cast<uint8_t>(o.scales_l[ib / 2] | ((code & 0xF) << 4));
      }
      o.scales_h = static_cast<uint16_t>(o.scales_h | ((code >> 4) << (2 * ib)));
    }
    for (int ib = 0; ib < 8; ++ib)
      for (int j = 0; j < 16; ++j)
        o.qs[16 * ib + j] = static_cast<uint8_t>(L[32 * ib + j] | (L[32 * ib + 16 + j] << 4));
  }
}

}  // namespace loom::sdk::gguf
