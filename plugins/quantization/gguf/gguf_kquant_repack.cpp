// Repacking Q2_K, Q3_K, Q4_K, Q5_K, Q6_K and IQ4_XS rows into the K-quant x8 layout (gguf_kquant_x8.hpp), and the
// activation bsum pairs its kernels broadcast.
#include <cstring>

#include "gguf_kquant_x8.hpp"
#include "loom/sdk_gguf_blocks.hpp"

namespace loom_gguf {

namespace g = loom::sdk::gguf;

namespace {

// Row r's super-block: its 256 codes in value order (Q4_K 0..15, Q5_K 0..31, Q6_K 0..63, IQ4_XS
// kIQ4NL indices 0..15), its sub-block scales (8, or Q6_K's 16; Q6_K's and IQ4_XS's as int8
// bytes) and mins (8; Q4_K and Q5_K only), d and dmin.
struct Unpacked {
  uint8_t code[g::kQKK];
  uint8_t scale[16];
  uint8_t min[8];
  uint16_t d, dmin;
};

void unpack(loom_dtype t, const uint8_t* block, Unpacked* u) {
  if (t == LOOM_DTYPE_Q2_K || t == LOOM_DTYPE_Q3_K) {
    // Value 128h + 32k + l: bits 2k of qs[32h + l] (both), bit 4h + k of hmask[l] (Q3_K).
    const auto& w2 = *reinterpret_cast<const g::BlockQ2_K*>(block);
    const auto& w3 = *reinterpret_cast<const g::BlockQ3_K*>(block);
    const bool q3 = t == LOOM_DTYPE_Q3_K;
    const uint8_t* qs = q3 ? w3.qs : w2.qs;
    for (int h = 0; h < 2; ++h)
      for (int k = 0; k < 4; ++k)
        for (int l = 0; l < 32; ++l) {
          int c = (qs[32 * h + l] >> (2 * k)) & 3;
          if (q3) c |= ((w3.hmask[l] >> (4 * h + k)) & 1) << 2;
          u->code[128 * h + 32 * k + l] = static_cast<uint8_t>(c);
        }
    for (int s = 0; s < 16; ++s)
      u->scale[s] = q3 ? static_cast<uint8_t>(static_cast<int8_t>(g::q3_k_scale(w3, s))) : w2.scales[s];
    u->d = q3 ? w3.d : w2.d;
    u->dmin = q3 ? 0 : w2.dmin;
    return;
  }
  if (t == LOOM_DTYPE_IQ4_XS) {
    const auto& w = *reinterpret_cast<const g::BlockIQ4_XS*>(block);
    for (int e = 0; e < g::kQKK; ++e) u->code[e] = static_cast<uint8_t>(g::iq4_xs_code(w, e));
    for (int j = 0; j < 8; ++j) u->scale[j] = static_cast<uint8_t>(static_cast<int8_t>(g::iq4_xs_scale(w, j)));
    u->d = w.d;
    u->dmin = 0;
    return;
  }
  if (t == LOOM_DTYPE_Q6_K) {
    const auto& w = *reinterpret_cast<const g::BlockQ6_K*>(block);
    for (int e = 0; e < g::kQKK; ++e) u->code[e] = static_cast<uint8_t>(g::q6_k_code(w, e));
    for (int s = 0; s < 16; ++s) u->scale[s] = static_cast<uint8_t>(w.scales[s]);
    u->d = w.d;
    u->dmin = 0;
    return;
  }
  // Q4_K and Q5_K share d, dmin, scales[12] and qs[128]; Q5_K's qh sits between them.
  const bool q5 = t == LOOM_DTYPE_Q5_K;
  const auto& w4 = *reinterpret_cast<const g::BlockQ4_K*>(block);
  const auto& w5 = *reinterpret_cast<const g::BlockQ5_K*>(block);
  const uint8_t* qs = q5 ? w5.qs : w4.qs;
  for (int j = 0; j < 8; ++j) {
    int sc = 0, m = 0;
    g::q4_k_scale_min(j, w4.scales, &sc, &m);
    u->scale[j] = static_cast<uint8_t>(sc);
    u->min[j] = static_cast<uint8_t>(m);
    for (int l = 0; l < 32; ++l) {
      int c = (qs[32 * (j / 2) + l] >> (4 * (j % 2))) & 0xF;
      if (q5) c |= ((w5.qh[l] >> j) & 1) << 4;
      u->code[32 * j + l] = static_cast<uint8_t>(c);
    }
  }
  u->d = w4.d;
  u->dmin = w4.dmin;
}

// Row r's Q2_K or Q3_K super-block into record rec.
void place_2bit(loom_dtype t, const Unpacked& u, int64_t r, uint8_t* rec) {
  for (int m = 0; m < 4; ++m)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) {
        uint8_t byte = 0;
        for (int q = 0; q < 4; ++q) byte |= static_cast<uint8_t>((u.code[64 * m + 16 * q + 4 * j + k] & 3) << (2 * q));
        rec[32 * (4 * m + j) + 4 * r + k] = byte;
      }
  int64_t at = 512;
  if (t == LOOM_DTYPE_Q3_K) {
    for (int m = 0; m < 4; ++m)
      for (int v = 0; v < 2; ++v) {
        uint32_t bits = 0;
        for (int j = 2 * v; j < 2 * v + 2; ++j)
          for (int q = 0; q < 4; ++q)
            for (int k = 0; k < 4; ++k)
              bits |= static_cast<uint32_t>((u.code[64 * m + 16 * q + 4 * j + k] >> 2) & 1)
                      << (8 * k + 4 * (j - 2 * v) + q);
        std::memcpy(rec + at + 64 * m + 32 * v + 4 * r, &bits, 4);
      }
    at += 256;
  }
  for (int p = 0; p < 8; ++p) {
    rec[at + 16 * p + 2 * r] = u.scale[2 * p];
    rec[at + 16 * p + 2 * r + 1] = u.scale[2 * p + 1];
  }
  at += 128;
  std::memcpy(rec + at + 2 * r, &u.d, 2);
  if (t == LOOM_DTYPE_Q2_K) std::memcpy(rec + at + 16 + 2 * r, &u.dmin, 2);
}

// Row r's super-block into record rec (gguf_kquant_x8.hpp's layout).
void place(loom_dtype t, const Unpacked& u, int64_t r, uint8_t* rec) {
  if (t == LOOM_DTYPE_Q2_K || t == LOOM_DTYPE_Q3_K) {
    place_2bit(t, u, r, rec);
    return;
  }
  for (int s = 0; s < 8; ++s)
    for (int j = 0; j < 4; ++j)
      for (int k = 0; k < 4; ++k) {
        const int e = 32 * s + 4 * j + k;
        rec[32 * (4 * s + j) + 4 * r + k] = static_cast<uint8_t>((u.code[e] & 0xF) | ((u.code[e + 16] & 0xF) << 4));
      }
  int64_t at = 1024;
  if (t == LOOM_DTYPE_Q5_K) {
    for (int s = 0; s < 8; ++s) {
      uint32_t bits = 0;
      for (int j = 0; j < 4; ++j)
        for (int k = 0; k < 4; ++k) {
          const int e = 32 * s + 4 * j + k;
          bits |= static_cast<uint32_t>((u.code[e] >> 4) & 1) << (8 * k + j);
          bits |= static_cast<uint32_t>((u.code[e + 16] >> 4) & 1) << (8 * k + 4 + j);
        }
      std::memcpy(rec + at + 32 * s + 4 * r, &bits, 4);
    }
    at += 256;
  } else if (t == LOOM_DTYPE_Q6_K) {
    for (int s = 0; s < 8; ++s)
      for (int h = 0; h < 2; ++h) {
        uint32_t bits = 0;
        for (int j = 0; j < 4; ++j)
          for (int k = 0; k < 4; ++k)
            bits |= static_cast<uint32_t>((u.code[32 * s + 16 * h + 4 * j + k] >> 4) & 3) << (8 * k + 2 * j);
        std::memcpy(rec + at + 64 * s + 32 * h + 4 * r, &bits, 4);
      }
    at += 512;
  }
  const int pairs = t == LOOM_DTYPE_Q6_K ? 8 : 4;
  for (int p = 0; p < pairs; ++p) {
    rec[at + 16 * p + 2 * r] = u.scale[2 * p];
    rec[at + 16 * p + 2 * r + 1] = u.scale[2 * p + 1];
  }
  at += 16 * pairs;
  const bool mins = t == LOOM_DTYPE_Q4_K || t == LOOM_DTYPE_Q5_K;
  if (mins) {
    for (int p = 0; p < 4; ++p) {
      rec[at + 16 * p + 2 * r] = u.min[2 * p];
      rec[at + 16 * p + 2 * r + 1] = u.min[2 * p + 1];
    }
    at += 64;
  }
  std::memcpy(rec + at + 2 * r, &u.d, 2);
  if (mins) std::memcpy(rec + at + 16 + 2 * r, &u.dmin, 2);
}

uint32_t int16_pair(int32_t lo, int32_t hi) {
  return static_cast<uint32_t>(static_cast<uint16_t>(lo)) | (static_cast<uint32_t>(static_cast<uint16_t>(hi)) << 16);
}

}  // namespace

PackedWeight allocate_kquant(loom_dtype dtype, int64_t n_rows, int64_t n_blocks) {
  PackedWeight p;
  p.quant_bytes = kquant_x8_record_bytes(dtype);
  p.n_rows = n_rows;
  p.n_blocks = n_blocks;
  p.group_bytes = (n_blocks * p.quant_bytes + 63) / 64 * 64;
  allocate_groups(&p, false);
  return p;
}

void pack_kquant_groups(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, PackedWeight* p, int64_t g0,
                        int64_t g1) {
  const int64_t block_bytes = g::block_geometry(dtype).bytes;
  Unpacked u;
  for (int64_t grp = g0; grp < g1; ++grp) {
    uint8_t* dst = p->data.get() + grp * p->group_bytes;
    std::memset(dst, 0, static_cast<size_t>(p->group_bytes));  // padding rows and bytes
    for (int64_t r = 0; r < kGroupRows && grp * kGroupRows + r < p->n_rows; ++r) {
      const uint8_t* src = rows + (grp * kGroupRows + r) * row_bytes;
      for (int64_t b = 0; b < p->n_blocks; ++b) {
        unpack(dtype, src + b * block_bytes, &u);
        place(dtype, u, r, dst + b * p->quant_bytes);
      }
    }
  }
}

PackedWeight pack_kquant(loom_dtype dtype, const uint8_t* rows, int64_t row_bytes, int64_t n_rows, int64_t n_blocks) {
  PackedWeight p = allocate_kquant(dtype, n_rows, n_blocks);
  pack_kquant_groups(dtype, rows, row_bytes, &p, 0, (n_rows + kGroupRows - 1) / kGroupRows);
  return p;
}

void kquant_activation_info(const uint8_t* xq, int64_t xq_row_bytes, int64_t n, int64_t nb, int32_t* side) {
  for (int64_t t = 0; t < n; ++t) {
    const auto* a = reinterpret_cast<const g::BlockQ8_K*>(xq + t * xq_row_bytes);
    for (int64_t b = 0; b < nb; ++b) {
      int32_t* o = side + (t * nb + b) * kKQuantSide;
      const int16_t* s = a[b].bsums;
      for (int p = 0; p < 8; ++p) o[p] = static_cast<int32_t>(int16_pair(s[2 * p], s[2 * p + 1]));
      for (int p = 0; p < 4; ++p)
        o[8 + p] = static_cast<int32_t>(int16_pair(s[4 * p] + s[4 * p + 1], s[4 * p + 2] + s[4 * p + 3]));
    }
  }
}

}  // namespace loom_gguf
