// SDK: the KV pool's block layout per KV dtype and the codecs of its quantized dtypes, header-only
// so the core (which allocates and copies blocks) and attention plugins (which write and read
// them) share one definition.
//
// Block layout, one layer's K (or V), one block:
//   [block_size, n_kv_heads, head_dim] elements of the dtype      (data)
//   padding to a multiple of 4 bytes                               (int8/fp8 only)
//   int8: [n_kv_heads] f32 scales, one per (block, head)
//   fp8:  [block_size, n_kv_heads] f16 scales, one per (token, head)
// A pool view keeps the shape [num_blocks, block_size, n_kv_heads, head_dim]; its strides[0] is
// block_bytes / element_size, so the scales ride along with every whole-block copy (copy-on-write,
// swap to host) and the attention ABI is unchanged. f32/f16/bf16 blocks have no scales.
//
// fp8_e4m3 scales, per (token, head), like per-token KV quantisation in serving engines: a row x
// [head_dim] is stored as e4m3(x / s) with s = amax(|x|) / 448 rounded up to an f16 (so nothing
// saturates), dequantised as code * s. A float format's relative precision does not depend on
// the scale, so a per-block scale buys nothing but range; a per-row scale maps each row's largest
// element onto 448 exactly (to 2^-11), and with head_dim 8 that element dominates q . k. On the
// demo model (head_dim 8) the KV perplexity change went +3.05% (power-of-two block scales) ->
// +1.48%, nearly all of it from K. Overhead: 2 bytes per (token, head) for K and for V, i.e.
// 2 / head_dim bytes per value (25% at head_dim 8, 1.6% at 128). A row is encoded once, from the
// original values, never re-encoded.
//
// int8 scales, per (block, head) (tokens arrive one at a time, so a block-head's scale must be able
// to grow): a stored element is round(x / scale), dequantised as q * scale, with scale = amax /
// 127 of the rows written so far.
//   - A row written at slot 0 of a block starts the block afresh: scale = that row's amax / 127
//     (whatever the block held before belongs to a freed sequence).
//   - A later row whose amax exceeds scale * 127 raises the scale to amax / 127 and re-encodes
//     the rows 0..slot-1 already in the block-head (decode with the old scale, encode with the
//     new); a smaller row is encoded with the current scale.
// So the scale only grows within a block, a row is re-encoded at most once per growth, and rows
// are exact to int8's resolution relative to the block-head's amax.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "loom/sdk_half.hpp"
#include "loom/types.h"

namespace loom::sdk::kv {

// Bytes of one element of a KV dtype; 0 for a dtype the pool cannot hold.
inline int64_t element_size(loom_dtype dtype) {
  switch (dtype) {
    case LOOM_DTYPE_F32: return 4;
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16: return 2;
    case LOOM_DTYPE_I8:
    case LOOM_DTYPE_FP8_E4M3: return 1;
    default: return 0;
  }
}

// Whether blocks of the dtype carry per-(block, head) scales.
inline bool has_scales(loom_dtype dtype) { return dtype == LOOM_DTYPE_I8 || dtype == LOOM_DTYPE_FP8_E4M3; }

// Largest magnitude an encoded element represents (before the scale).
inline float qmax(loom_dtype dtype) { return dtype == LOOM_DTYPE_I8 ? 127.0f : 448.0f; }

// Whether the dtype's scales are per (token, head) (fp8) rather than per (block, head) (int8).
inline bool has_row_scales(loom_dtype dtype) { return dtype == LOOM_DTYPE_FP8_E4M3; }

// Bytes of one stored scale: an f16 per (token, head) for fp8, an f32 per (block, head) for int8.
inline int64_t scale_size(loom_dtype dtype) { return has_row_scales(dtype) ? 2 : 4; }

// Bytes between the scales of consecutive slots of one head: 0 where one scale serves the block.
inline int64_t scale_slot_stride(loom_dtype dtype, int64_t n_kv_heads) {
  return has_row_scales(dtype) ? n_kv_heads * scale_size(dtype) : 0;
}

// Byte offset of the scales within a block (the data rounded up to 4 bytes).
inline int64_t scales_offset(loom_dtype dtype, int64_t block_size, int64_t n_kv_heads, int64_t head_dim) {
  const int64_t data = block_size * n_kv_heads * head_dim * element_size(dtype);
  return (data + 3) / 4 * 4;
}

// Byte offset within a block of the scale that (slot, head) is dequantised with.
inline int64_t scale_offset_of(loom_dtype dtype, int64_t block_size, int64_t n_kv_heads, int64_t head_dim,
                               int64_t slot, int64_t head) {
  return scales_offset(dtype, block_size, n_kv_heads, head_dim) + slot * scale_slot_stride(dtype, n_kv_heads) +
         head * scale_size(dtype);
}

// Bytes of one block of one layer's K (or V), scales included.
inline int64_t block_bytes(loom_dtype dtype, int64_t block_size, int64_t n_kv_heads, int64_t head_dim) {
  if (!has_scales(dtype)) return block_size * n_kv_heads * head_dim * element_size(dtype);
  const int64_t scales = has_row_scales(dtype) ? block_size * n_kv_heads : n_kv_heads;
  return scales_offset(dtype, block_size, n_kv_heads, head_dim) + scales * scale_size(dtype);
}

// Bytes of scales per block of one layer's K (or V): what block_bytes adds to the data.
inline int64_t scale_bytes_per_block(loom_dtype dtype, int64_t block_size, int64_t n_kv_heads, int64_t head_dim) {
  const int64_t data = block_size * n_kv_heads * head_dim * element_size(dtype);
  return block_bytes(dtype, block_size, n_kv_heads, head_dim) - data;
}

// Scale bytes of one layer's K (or V) per token: fp8's per-(token, head) f16 scales. A pool
// budget per token is n_kv_heads * head_dim * element_size plus this; int8's per-block scales
// are scale_bytes_per_block.
inline int64_t scale_bytes_per_token(loom_dtype dtype, int64_t n_kv_heads) {
  return has_row_scales(dtype) ? n_kv_heads * scale_size(dtype) : 0;
}

// The scale stored at `at` (scale_size(dtype) bytes) as f32.
inline float load_scale(loom_dtype dtype, const char* at) {
  if (has_row_scales(dtype)) {
    uint16_t h;
    std::memcpy(&h, at, 2);
    return f16_to_f32(h);
  }
  float f;
  std::memcpy(&f, at, 4);
  return f;
}

// "f32", "f16", "bf16", "int8", "fp8_e4m3" (the [cache] kv_dtype spellings) <-> dtype.
inline const char* dtype_name(loom_dtype dtype) {
  switch (dtype) {
    case LOOM_DTYPE_F32: return "f32";
    case LOOM_DTYPE_F16: return "f16";
    case LOOM_DTYPE_BF16: return "bf16";
    case LOOM_DTYPE_I8: return "int8";
    case LOOM_DTYPE_FP8_E4M3: return "fp8_e4m3";
    default: return "unsupported";
  }
}
inline loom_dtype dtype_from_name(const char* name) {
  for (loom_dtype d : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16, LOOM_DTYPE_I8, LOOM_DTYPE_FP8_E4M3}) {
    if (std::strcmp(name, dtype_name(d)) == 0) return d;
  }
  return LOOM_DTYPE_INVALID;
}

// fp8 E4M3 ("fn": no infinities, 0x7f/0xff are NaN, largest finite 448) -> f32, exact.
inline float fp8_e4m3_to_f32(uint8_t b) {
  const uint32_t exp = (b >> 3) & 0xfu, mant = b & 0x7u;
  float mag;
  if ((b & 0x7fu) == 0x7fu) mag = NAN;
  else if (exp == 0) mag = std::ldexp(static_cast<float>(mant), -9);  // subnormal: mant * 2^-9
  else mag = std::ldexp(static_cast<float>(8 + mant), static_cast<int>(exp) - 10);
  return (b & 0x80u) ? -mag : mag;
}

// f32 -> fp8 E4M3, round to nearest even, saturating at +-448 (NaN -> 0x7f).
inline uint8_t f32_to_fp8_e4m3(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  const uint8_t sign = static_cast<uint8_t>((bits >> 24) & 0x80u);
  const uint32_t abs = bits & 0x7fffffffu;
  if (abs > 0x7f800000u) return 0x7f;
  if (abs >= 0x43e00000u) return sign | 0x7e;  // >= 448
  if (abs < 0x3c800000u) {                     // below 2^-6: subnormal steps of 2^-9
    float mag;
    std::memcpy(&mag, &abs, 4);
    // nearbyint rounds half to even; 8 steps is exactly the smallest normal, code 0x08.
    return sign | static_cast<uint8_t>(std::nearbyint(mag * 512.0f));
  }
  // Normal: keep 3 mantissa bits with round-to-nearest-even, then rebias 127 -> 7.
  const uint32_t rounded = abs + 0x7ffffu + ((abs >> 20) & 1u);
  const uint32_t code = (rounded >> 20) - ((127u - 7u) << 3);
  return sign | static_cast<uint8_t>(std::min<uint32_t>(code, 0x7eu));
}

// All 256 fp8 codes decoded, for table-driven dequantisation.
inline const std::array<float, 256>& fp8_e4m3_table() {
  static const std::array<float, 256> table = [] {
    std::array<float, 256> t{};
    for (int i = 0; i < 256; ++i) t[static_cast<size_t>(i)] = fp8_e4m3_to_f32(static_cast<uint8_t>(i));
    return t;
  }();
  return table;
}

inline int8_t f32_to_int8(float x) {
  return static_cast<int8_t>(std::clamp(std::nearbyint(x), -127.0f, 127.0f));
}

namespace detail {
// Encodes n values of x divided by `scale` (0 -> all zero) as int8 or fp8 codes.
inline void encode_scaled(loom_dtype dtype, const float* x, float scale, int64_t n, uint8_t* out) {
  for (int64_t d = 0; d < n; ++d) {
    const float y = scale > 0.0f ? x[d] / scale : 0.0f;
    out[d] = dtype == LOOM_DTYPE_I8 ? static_cast<uint8_t>(f32_to_int8(y)) : f32_to_fp8_e4m3(y);
  }
}
inline float decode(loom_dtype dtype, uint8_t code) {
  return dtype == LOOM_DTYPE_I8 ? static_cast<float>(static_cast<int8_t>(code)) : fp8_e4m3_to_f32(code);
}
}  // namespace detail

// Writes one row x [head_dim] into `block` (one layer's K or V block, layout above) at token slot
// `slot` (0..block_size-1) of KV head `head`, following the scale scheme above.
inline void write_row(loom_dtype dtype, char* block, int64_t slot, int64_t head, const float* x, int64_t block_size,
                      int64_t n_kv_heads, int64_t head_dim) {
  const int64_t es = element_size(dtype);
  const int64_t row_stride = n_kv_heads * head_dim;  // elements between consecutive slots
  char* row = block + (slot * row_stride + head * head_dim) * es;
  switch (dtype) {
    case LOOM_DTYPE_F32: std::memcpy(row, x, static_cast<size_t>(head_dim) * 4); return;
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16:
      for (int64_t d = 0; d < head_dim; ++d) {
        const uint16_t h = dtype == LOOM_DTYPE_F16 ? f32_to_f16(x[d]) : f32_to_bf16(x[d]);
        std::memcpy(row + d * 2, &h, 2);
      }
      return;
    default: break;
  }
  float amax = 0.0f;
  for (int64_t d = 0; d < head_dim; ++d) amax = std::max(amax, std::fabs(x[d]));
  if (dtype == LOOM_DTYPE_FP8_E4M3) {
    // The row's own scale: amax / 448 rounded up to an f16, so amax maps onto 448 (to 2^-11) and
    // never beyond it; the row is encoded with exactly the scale that is stored.
    const float needed = amax / qmax(dtype);
    uint16_t h = f32_to_f16(needed);
    if (needed > 0.0f && f16_to_f32(h) < needed) ++h;  // next f16 up (positive, so bits + 1)
    if (h >= 0x7c00u) h = 0x7bffu;                     // beyond f16: the largest finite; the row saturates
    std::memcpy(block + scale_offset_of(dtype, block_size, n_kv_heads, head_dim, slot, head), &h, 2);
    detail::encode_scaled(dtype, x, f16_to_f32(h), head_dim, reinterpret_cast<uint8_t*>(row));
    return;
  }
  char* scale_at = block + scale_offset_of(dtype, block_size, n_kv_heads, head_dim, slot, head);
  float scale;
  std::memcpy(&scale, scale_at, 4);
  const float needed = amax / qmax(dtype);
  if (slot == 0) {
    scale = needed;
  } else if (needed > scale) {
    // Re-encode the block-head's earlier rows under the larger scale.
    float tmp[512];
    for (int64_t s = 0; s < slot; ++s) {
      auto* codes = reinterpret_cast<uint8_t*>(block + s * row_stride + head * head_dim);
      for (int64_t d0 = 0; d0 < head_dim; d0 += 512) {
        const int64_t n = std::min<int64_t>(512, head_dim - d0);
        for (int64_t d = 0; d < n; ++d) tmp[d] = detail::decode(dtype, codes[d0 + d]) * scale;
        detail::encode_scaled(dtype, tmp, needed, n, codes + d0);
      }
    }
    scale = needed;
  }
  std::memcpy(scale_at, &scale, 4);
  detail::encode_scaled(dtype, x, scale, head_dim, reinterpret_cast<uint8_t*>(row));
}

// Reads one row back as f32 (reference path and tests; kernels dequantise in bulk).
inline void read_row(loom_dtype dtype, const char* block, int64_t slot, int64_t head, float* out, int64_t block_size,
                     int64_t n_kv_heads, int64_t head_dim) {
  const int64_t es = element_size(dtype);
  const char* row = block + (slot * n_kv_heads * head_dim + head * head_dim) * es;
  const float scale =
      has_scales(dtype)
          ? load_scale(dtype, block + scale_offset_of(dtype, block_size, n_kv_heads, head_dim, slot, head))
          : 1.0f;
  for (int64_t d = 0; d < head_dim; ++d) {
    uint16_t h = 0;
    switch (dtype) {
      case LOOM_DTYPE_F32: std::memcpy(&out[d], row + d * 4, 4); break;
      case LOOM_DTYPE_F16: std::memcpy(&h, row + d * 2, 2); out[d] = f16_to_f32(h); break;
      case LOOM_DTYPE_BF16: std::memcpy(&h, row + d * 2, 2); out[d] = bf16_to_f32(h); break;
      default: out[d] = detail::decode(dtype, static_cast<uint8_t>(row[d])) * scale; break;
    }
  }
}

}  // namespace loom::sdk::kv
