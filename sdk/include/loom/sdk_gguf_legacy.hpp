// SDK: ggml's other 32-value block formats Q4_1, Q5_0, Q5_1 and IQ4_NL, and the Q8_1 activation
// blocks Q4_1/Q5_1 are paired with: their byte layouts, the quantizer llama.cpp writes model
// files with, and the dequantizer of each. Header-only; sdk_gguf_blocks.hpp dispatches to it by
// dtype, so the gguf plugin, the core's embedding lookup and loom-convert agree on every bit.
//
// Layouts (little-endian, packed, as ggml stores them); nibble j < 16 of qs is the low nibble of
// qs[j], value j + 16 its high nibble, as in Q4_0:
//   Q4_1    20 bytes: f16 d, f16 m, u8 qs[16]                  x = d * q + m        (q 0..15)
//   Q5_0    22 bytes: f16 d, u8 qh[4], u8 qs[16]               x = d * (q - 16)     (q 0..31)
//   Q5_1    24 bytes: f16 d, f16 m, u8 qh[4], u8 qs[16]        x = d * q + m        (q 0..31)
//           Q5: bit j of the little-endian u32 qh is value j's fifth bit (q = nibble | bit << 4)
//   IQ4_NL  18 bytes: f16 d, u8 qs[16]                         x = d * kIq4nlValues[nibble]
//   Q8_1    36 bytes: f16 d, f16 s, int8 qs[32], s = d * sum(qs); activations only
//
// The quantizers follow llama.cpp's (ggml-quants.c): Q4_1/Q5_0/Q5_1 its quantize_row_*_ref
// (truncating casts, f32 arithmetic in the same order), IQ4_NL its quantize_iq4_nl without an
// importance matrix (the scale search llama_model_quantize runs, weights x^2, 7 tries each side),
// so a file loom-convert writes holds the blocks llama.cpp would write.
#pragma once

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "loom/sdk_half.hpp"

namespace loom::sdk::gguf {

constexpr int kLegacyValues = 32;  // values per block of every format in this header

struct BlockQ4_1 {
  uint16_t d;  // f16 step
  uint16_t m;  // f16 value of q = 0 (the block minimum)
  uint8_t qs[kLegacyValues / 2];
};
struct BlockQ5_0 {
  uint16_t d;  // f16
  uint8_t qh[4];  // fifth bits, u32 little-endian
  uint8_t qs[kLegacyValues / 2];
};
struct BlockQ5_1 {
  uint16_t d;  // f16 step
  uint16_t m;  // f16 minimum
  uint8_t qh[4];
  uint8_t qs[kLegacyValues / 2];
};
struct BlockIQ4_NL {
  uint16_t d;  // f16
  uint8_t qs[kLegacyValues / 2];
};
struct BlockQ8_1 {
  uint16_t d;  // f16
  uint16_t s;  // f16, d * sum(qs)
  int8_t qs[kLegacyValues];
};

static_assert(sizeof(BlockQ4_1) == 20 && sizeof(BlockQ5_0) == 22 && sizeof(BlockQ5_1) == 24 &&
                  sizeof(BlockIQ4_NL) == 18 && sizeof(BlockQ8_1) == 36,
              "GGUF block layouts must match ggml's byte for byte");

// IQ4_NL's 16 levels (ggml-common.h kvalues_iq4nl), denser near zero where weights cluster.
inline constexpr int8_t kIq4nlValues[16] = {-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113};

inline uint32_t q5_high_bits(const uint8_t* qh) {
  uint32_t v;
  std::memcpy(&v, qh, 4);
  return v;
}

// Codes q[32] (0..15 or 0..31) into qs, and their fifth bits into qh (when qh is not null).
inline void pack_codes(const int* q, uint8_t* qs, uint8_t* qh) {
  uint32_t high = 0;
  for (int j = 0; j < kLegacyValues / 2; ++j) {
    qs[j] = static_cast<uint8_t>((q[j] & 0xF) | ((q[j + 16] & 0xF) << 4));
    high |= static_cast<uint32_t>((q[j] >> 4) & 1) << j;
    high |= static_cast<uint32_t>((q[j + 16] >> 4) & 1) << (j + 16);
  }
  if (qh != nullptr) std::memcpy(qh, &high, 4);
}

// Code of value j of a block (0..15, or 0..31 with qh).
inline int block_code(const uint8_t* qs, const uint8_t* qh, int j) {
  const int nibble = j < 16 ? (qs[j] & 0xF) : (qs[j - 16] >> 4);
  return qh == nullptr ? nibble : nibble | static_cast<int>(((q5_high_bits(qh) >> j) & 1) << 4);
}

// ---- Q4_1 / Q5_1: q = (x - min) / d with d = (max - min) / levels ------------------------------

// One block of x to (d, m) and codes, as llama.cpp's quantize_row_q{4,5}_1_ref.
inline void quantize_min_block(const float* x, int levels, uint16_t* d16, uint16_t* m16, int* q) {
  float min = FLT_MAX, max = -FLT_MAX;
  for (int j = 0; j < kLegacyValues; ++j) {
    if (x[j] < min) min = x[j];
    if (x[j] > max) max = x[j];
  }
  const float d = (max - min) / static_cast<float>(levels);
  const float id = d != 0 ? 1.0f / d : 0.0f;
  *d16 = f32_to_f16(d);
  *m16 = f32_to_f16(min);
  for (int j = 0; j < kLegacyValues; ++j) q[j] = std::min(levels, static_cast<int>((x[j] - min) * id + 0.5f));
}

inline void quantize_q4_1(const float* x, BlockQ4_1* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kLegacyValues) {
    int q[kLegacyValues];
    quantize_min_block(x, 15, &y[b].d, &y[b].m, q);
    pack_codes(q, y[b].qs, nullptr);
  }
}

inline void quantize_q5_1(const float* x, BlockQ5_1* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kLegacyValues) {
    int q[kLegacyValues];
    quantize_min_block(x, 31, &y[b].d, &y[b].m, q);
    pack_codes(q, y[b].qs, y[b].qh);
  }
}

inline void dequantize_q4_1(const BlockQ4_1* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int j = 0; j < kLegacyValues; ++j)
      y[b * kLegacyValues + j] = static_cast<float>(block_code(x[b].qs, nullptr, j)) * d + m;
  }
}

inline void dequantize_q5_1(const BlockQ5_1* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d), m = f16_to_f32(x[b].m);
    for (int j = 0; j < kLegacyValues; ++j)
      y[b * kLegacyValues + j] = static_cast<float>(block_code(x[b].qs, x[b].qh, j)) * d + m;
  }
}

// ---- Q5_0: the value of largest magnitude maps to code 0 (q - 16 = -16), as Q4_0 ---------------

inline void quantize_q5_0(const float* x, BlockQ5_0* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kLegacyValues) {
    float amax = 0, max = 0;
    for (int j = 0; j < kLegacyValues; ++j) {
      if (amax < std::fabs(x[j])) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    const float d = max / -16.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    int q[kLegacyValues];
    for (int j = 0; j < kLegacyValues; ++j) q[j] = std::min(31, static_cast<int>(x[j] * id + 16.5f));
    pack_codes(q, y[b].qs, y[b].qh);
  }
}

inline void dequantize_q5_0(const BlockQ5_0* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kLegacyValues; ++j)
      y[b * kLegacyValues + j] = static_cast<float>(block_code(x[b].qs, x[b].qh, j) - 16) * d;
  }
}

// ---- IQ4_NL --------------------------------------------------------------------------------------

// Index of the level nearest v (ties to the upper level), as ggml's best_index_int8.
inline int iq4_nl_nearest(float v) {
  const int8_t* values = kIq4nlValues;
  if (v <= values[0]) return 0;
  if (v >= values[15]) return 15;
  int lo = 0, hi = 15;
  while (hi - lo > 1) {
    const int mid = (lo + hi) / 2;
    if (v < values[mid]) {
      hi = mid;
    } else {
      lo = mid;
    }
  }
  return v - values[hi - 1] < values[hi] - v ? hi - 1 : hi;
}

// Weighted least squares over candidate scales: for each candidate, codes by nearest level,
// then the scale sum(w q x) / sum(w q^2) that fits them best; the candidate with the largest
// (sum w q x)^2 / sum(w q^2) wins. Candidates: -max / -127 and (k - 127) / max for |k| <= 7.
inline void quantize_iq4_nl(const float* x, BlockIQ4_NL* y, int64_t n_blocks) {
  constexpr int kTries = 7;
  const int8_t* values = kIq4nlValues;
  for (int64_t b = 0; b < n_blocks; ++b, x += kLegacyValues) {
    float weight[kLegacyValues], amax = 0, max = 0;
    for (int j = 0; j < kLegacyValues; ++j) {
      weight[j] = x[j] * x[j];
      if (std::fabs(x[j]) > amax) {
        amax = std::fabs(x[j]);
        max = x[j];
      }
    }
    float scale = 0;
    if (amax >= 1e-15f) {  // ggml's GROUP_MAX_EPS: a block of zeros keeps scale 0
      // Sums for the codes that scale `id` gives.
      const auto fit = [&](float id, float* sumqx, float* sumq2) {
        *sumqx = *sumq2 = 0;
        for (int j = 0; j < kLegacyValues; ++j) {
          const float q = values[iq4_nl_nearest(id * x[j])];
          *sumqx += weight[j] * q * x[j];
          *sumq2 += weight[j] * q * q;
        }
      };
      float sumqx = 0, sumq2 = 0;
      fit(1.0f / (-max / static_cast<float>(values[0])), &sumqx, &sumq2);
      float d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
      float best = d * sumqx;
      for (int k = -kTries; k <= kTries; ++k) {
        fit(static_cast<float>(k + values[0]) / max, &sumqx, &sumq2);
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
          d = sumqx / sumq2;
          best = d * sumqx;
        }
      }
      scale = d;
    }
    y[b].d = f32_to_f16(scale);
    const float id = scale != 0 ? 1.0f / scale : 0.0f;
    int q[kLegacyValues];
    for (int j = 0; j < kLegacyValues; ++j) q[j] = iq4_nl_nearest(id * x[j]);
    pack_codes(q, y[b].qs, nullptr);
  }
}

inline void dequantize_iq4_nl(const BlockIQ4_NL* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kLegacyValues; ++j)
      y[b * kLegacyValues + j] = d * static_cast<float>(kIq4nlValues[block_code(x[b].qs, nullptr, j)]);
  }
}

// ---- Q8_1 (activations) --------------------------------------------------------------------------

// s from d and qs.
inline void set_q8_1_sum(BlockQ8_1* y) {
  int sum = 0;
  for (int j = 0; j < kLegacyValues; ++j) sum += y->qs[j];
  y->s = f32_to_f16(f16_to_f32(y->d) * static_cast<float>(sum));
}

// d = max|x| / 127 and q = round(x / d) to nearest even: the bits of Loom's Q8_0 (so a SIMD Q8_0
// quantizer can make them); s = f16(d * sum q) with d as stored, so s is the sum of the block's
// dequantized values rounded once (llama.cpp multiplies by d before its f16 rounding; the two
// differ by at most a rounding of s).
inline void quantize_q8_1(const float* x, BlockQ8_1* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b, x += kLegacyValues) {
    float amax = 0;
    for (int j = 0; j < kLegacyValues; ++j) amax = std::max(amax, std::fabs(x[j]));
    const float d = amax / 127.0f;
    const float id = d != 0 ? 1.0f / d : 0.0f;
    y[b].d = f32_to_f16(d);
    for (int j = 0; j < kLegacyValues; ++j) y[b].qs[j] = static_cast<int8_t>(std::lrintf(x[j] * id));
    set_q8_1_sum(&y[b]);
  }
}

inline void dequantize_q8_1(const BlockQ8_1* x, float* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    const float d = f16_to_f32(x[b].d);
    for (int j = 0; j < kLegacyValues; ++j) y[b * kLegacyValues + j] = d * static_cast<float>(x[b].qs[j]);
  }
}

}  // namespace loom::sdk::gguf
