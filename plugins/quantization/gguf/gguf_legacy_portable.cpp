// Portable kernels for Q4_1, Q5_0, Q5_1 and IQ4_NL on the file layout: one (activation row,
// weight row) dot product at a time, each block's integer sum exact, the blocks folded into a
// float sum in increasing order; and the legacy x8 repacking the SIMD kernels read.
#include <cstring>
#include <type_traits>

#include "gguf_legacy_kernels.hpp"

namespace loom_gguf {
namespace {

namespace g = loom::sdk::gguf;
using loom::sdk::f16_to_f32;

// sum_j code_j * a_j over one block (codes 0..15 or, with qh, 0..31).
int32_t code_dot(const uint8_t* qs, const uint8_t* qh, const int8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < g::kQK; ++j) s += g::block_code(qs, qh, j) * int32_t{a[j]};
  return s;
}

int32_t activation_sum(const int8_t* a) {
  int32_t s = 0;
  for (int j = 0; j < g::kQK; ++j) s += a[j];
  return s;
}

// Q4_1 / Q5_1 x Q8_1: d_w d_a sum(q a) + m_w s_a.
template <class W>
float dot_min(const W* w, const g::BlockQ8_1* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const uint8_t* qh = nullptr;
    if constexpr (std::is_same_v<W, g::BlockQ5_1>) qh = w[b].qh;
    const int32_t isum = code_dot(w[b].qs, qh, a[b].qs);
    sum += (f16_to_f32(w[b].d) * f16_to_f32(a[b].d)) * static_cast<float>(isum) +
           f16_to_f32(w[b].m) * f16_to_f32(a[b].s);
  }
  return sum;
}

// Q5_0 x Q8_0: d_w d_a sum((q - 16) a).
float dot_q5_0(const g::BlockQ5_0* w, const g::BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    const int32_t isum = code_dot(w[b].qs, w[b].qh, a[b].qs) - 16 * activation_sum(a[b].qs);
    sum += (f16_to_f32(w[b].d) * f16_to_f32(a[b].d)) * static_cast<float>(isum);
  }
  return sum;
}

// IQ4_NL x Q8_0: d_w d_a sum(level(q) a).
float dot_iq4_nl(const g::BlockIQ4_NL* w, const g::BlockQ8_0* a, int64_t nb) {
  float sum = 0;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t isum = 0;
    for (int j = 0; j < g::kQK; ++j) isum += g::kIq4nlValues[g::block_code(w[b].qs, nullptr, j)] * int32_t{a[b].qs[j]};
    sum += (f16_to_f32(w[b].d) * f16_to_f32(a[b].d)) * static_cast<float>(isum);
  }
  return sum;
}

template <class W, class A, float (*Dot)(const W*, const A*, int64_t)>
void tile(const uint8_t* w, int64_t w_row_bytes, int64_t n_rows, const uint8_t* xq, int64_t xq_row_bytes, int64_t n,
          int64_t in, float* y, int64_t ys) {
  const int64_t nb = in / g::kQK;
  for (int64_t t = 0; t < n; ++t) {
    const auto* a = reinterpret_cast<const A*>(xq + t * xq_row_bytes);
    for (int64_t j = 0; j < n_rows; ++j) y[t * ys + j] = Dot(reinterpret_cast<const W*>(w + j * w_row_bytes), a, nb);
  }
}

// Row r's fifth bits rearranged for the x8 kernels (bit 8k + j: value 4j + k; bit 8k + 4 + j:
// value 16 + 4j + k).
uint32_t x8_high_bits(const uint8_t* qh) {
  const uint32_t h = g::q5_high_bits(qh);
  uint32_t out = 0;
  for (int j = 0; j < 4; ++j) {
    for (int k = 0; k < 4; ++k) {
      out |= ((h >> (4 * j + k)) & 1u) << (8 * k + j);
      out |= ((h >> (16 + 4 * j + k)) & 1u) << (8 * k + 4 + j);
    }
  }
  return out;
}

// The record of block b of 8 rows: nibbles, (fifth bits,) d, (m).
template <class Block>
PackedWeight pack(const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  constexpr bool kQ5 = std::is_same_v<Block, g::BlockQ5_0> || std::is_same_v<Block, g::BlockQ5_1>;
  constexpr bool kMin = std::is_same_v<Block, g::BlockQ4_1> || std::is_same_v<Block, g::BlockQ5_1>;
  constexpr int64_t kScaleAt = kQ5 ? 160 : 128;
  PackedWeight p;
  p.quant_bytes = kScaleAt + 16 + (kMin ? 16 : 0);
  p.n_rows = n_rows;
  p.n_blocks = n_blocks;
  p.group_bytes = (n_blocks * p.quant_bytes + 63) / 64 * 64;
  const int64_t n_groups = (n_rows + kGroupRows - 1) / kGroupRows;
  allocate_groups(&p);
  for (int64_t grp = 0; grp < n_groups; ++grp) {
    for (int64_t r = 0; r < kGroupRows && grp * kGroupRows + r < n_rows; ++r) {
      const auto* src = reinterpret_cast<const Block*>(rows + (grp * kGroupRows + r) * row_bytes);
      for (int64_t b = 0; b < n_blocks; ++b) {
        uint8_t* rec = p.data.get() + grp * p.group_bytes + b * p.quant_bytes;
        for (int64_t j = 0; j < 4; ++j) std::memcpy(rec + 32 * j + 4 * r, src[b].qs + 4 * j, 4);
        if constexpr (kQ5) {
          const uint32_t bits = x8_high_bits(src[b].qh);
          std::memcpy(rec + 128 + 4 * r, &bits, 4);
        }
        std::memcpy(rec + kScaleAt + 2 * r, &src[b].d, 2);
        if constexpr (kMin) std::memcpy(rec + kScaleAt + 16 + 2 * r, &src[b].m, 2);
      }
    }
  }
  return p;
}

}  // namespace

LegacyKernels legacy_portable_kernels() {
  return LegacyKernels{&tile<g::BlockQ4_1, g::BlockQ8_1, &dot_min<g::BlockQ4_1>>,
                       &tile<g::BlockQ5_0, g::BlockQ8_0, &dot_q5_0>,
                       &tile<g::BlockQ5_1, g::BlockQ8_1, &dot_min<g::BlockQ5_1>>,
                       &tile<g::BlockIQ4_NL, g::BlockQ8_0, &dot_iq4_nl>};
}

PackedWeight pack_legacy(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  switch (dtype) {
    case LOOM_DTYPE_Q4_1: return pack<g::BlockQ4_1>(rows, row_bytes, n_rows, n_blocks);
    case LOOM_DTYPE_Q5_0: return pack<g::BlockQ5_0>(rows, row_bytes, n_rows, n_blocks);
    case LOOM_DTYPE_Q5_1: return pack<g::BlockQ5_1>(rows, row_bytes, n_rows, n_blocks);
    default: return pack<g::BlockIQ4_NL>(rows, row_bytes, n_rows, n_blocks);
  }
}

void quantize_q8_1(QuantizeQ8_0 quantize_q8_0, const float* x, g::BlockQ8_1* y, int64_t n_blocks) {
  for (int64_t b = 0; b < n_blocks; ++b) {
    g::BlockQ8_0 q;
    quantize_q8_0(x + b * g::kQK, &q, 1);
    y[b].d = q.d;
    std::memcpy(y[b].qs, q.qs, sizeof(q.qs));
    g::set_q8_1_sum(&y[b]);
  }
}

void legacy_activation_info(bool q8_1, const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb,
                            LegacyActivationInfo info) {
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t b = 0; b < nb; ++b) {
      const int64_t i = t * nb + b;
      if (q8_1) {
        const auto& blk = reinterpret_cast<const g::BlockQ8_1*>(xq + t * xq_row_bytes)[b];
        info.d[i] = f16_to_f32(blk.d);
        info.s[i] = f16_to_f32(blk.s);
      } else {
        const auto& blk = reinterpret_cast<const g::BlockQ8_0*>(xq + t * xq_row_bytes)[b];
        info.d[i] = f16_to_f32(blk.d);
        info.offset[i] = 8 * activation_sum(blk.qs);
      }
    }
  }
}

}  // namespace loom_gguf
