// The portable tile kernel (whatever the baseline ISA is), and the run-time choice between it and
// the AVX2 kernel of flash_cpu_kernel_avx2.cpp. The loops are plain and contiguous so GCC's -O3
// vectoriser turns them into SIMD code for the baseline ISA.
#include "flash_cpu_kernel.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "loom/sdk_kv_quant.hpp"

namespace loom::flash_cpu {
namespace {

// Independent partial sums: a float reduction is only vectorised when its order is spelled out
// (no -ffast-math here), and 16 lanes are two AVX registers, hiding the add latency.
constexpr int32_t kLanes = 16;

[[gnu::always_inline]] inline float dot(const float* __restrict a, const float* __restrict b, int32_t n) {
  float s[kLanes] = {};
  int32_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int32_t i = 0; i < kLanes; ++i) s[i] += a[d + i] * b[d + i];
  }
  for (int32_t i = 0; d + i < n; ++i) s[i] += a[d + i] * b[d + i];  // tail: fewer than kLanes
  // Pairwise fold with constant trip counts, so it stays in vector registers.
  for (int32_t i = 0; i < 8; ++i) s[i] += s[i + 8];
  for (int32_t i = 0; i < 4; ++i) s[i] += s[i + 4];
  for (int32_t i = 0; i < 2; ++i) s[i] += s[i + 2];
  return s[0] + s[1];
}
static_assert(kLanes == 16, "dot's fold is written for 16 lanes");

// Four dot products of `q` with k0..k3, each summed exactly as dot() sums it (same lanes, same
// fold), so a score never depends on whether its key went through here or through dot(). Loading
// q once for four keys halves the loads per multiply-add.
[[gnu::always_inline]] inline void dot4(const float* __restrict q, const float* __restrict k0,
                                        const float* __restrict k1, const float* __restrict k2,
                                        const float* __restrict k3, int32_t n, float* out) {
  float s0[kLanes] = {}, s1[kLanes] = {}, s2[kLanes] = {}, s3[kLanes] = {};
  int32_t d = 0;
  for (; d + kLanes <= n; d += kLanes) {
    for (int32_t i = 0; i < kLanes; ++i) {
      const float x = q[d + i];
      s0[i] += x * k0[d + i];
      s1[i] += x * k1[d + i];
      s2[i] += x * k2[d + i];
      s3[i] += x * k3[d + i];
    }
  }
  for (int32_t i = 0; d + i < n; ++i) {
    const float x = q[d + i];
    s0[i] += x * k0[d + i];
    s1[i] += x * k1[d + i];
    s2[i] += x * k2[d + i];
    s3[i] += x * k3[d + i];
  }
  float* lanes[4] = {s0, s1, s2, s3};
  for (int32_t c = 0; c < 4; ++c) {
    float* t = lanes[c];
    for (int32_t i = 0; i < 8; ++i) t[i] += t[i + 8];
    for (int32_t i = 0; i < 4; ++i) t[i] += t[i + 4];
    for (int32_t i = 0; i < 2; ++i) t[i] += t[i + 2];
    out[c] = t[0] + t[1];
  }
}

// acc += w * x over n contiguous floats.
[[gnu::always_inline]] inline void axpy(float* __restrict acc, float w, const float* __restrict x, int32_t n) {
#pragma GCC ivdep
  for (int32_t d = 0; d < n; ++d) acc[d] += w * x[d];
}

// acc += w[0] * x0 + w[1] * x1 + w[2] * x2 + w[3] * x3, added in that order: the same sums as
// four axpy calls, with one load and store of acc instead of four.
[[gnu::always_inline]] inline void axpy4(float* __restrict acc, const float* w, const float* __restrict x0,
                                         const float* __restrict x1, const float* __restrict x2,
                                         const float* __restrict x3, int32_t n) {
  const float w0 = w[0], w1 = w[1], w2 = w[2], w3 = w[3];
#pragma GCC ivdep
  for (int32_t d = 0; d < n; ++d) {
    float a = acc[d];
    a += w0 * x0[d];
    a += w1 * x1[d];
    a += w2 * x2[d];
    a += w3 * x3[d];
    acc[d] = a;
  }
}

[[gnu::always_inline]] inline void scale_in_place(float* __restrict x, float f, int32_t n) {
#pragma GCC ivdep
  for (int32_t d = 0; d < n; ++d) x[d] *= f;
}

// Folds one KV block into one row's running state. `n` (1..block_size) keys of the block are
// admitted by the row's position; `k`/`v` point at the block's first row for this KV head and
// ks/vs are the floats between consecutive rows.
[[gnu::always_inline]] inline void fold_block(const TileArgs& a, const float* q, const float* k, int64_t ks,
                                              const float* v, int64_t vs, int32_t n, float& m, float& l, float* acc,
                                              float* scores) {
  const int32_t D = a.head_dim;
  float block_max = -std::numeric_limits<float>::infinity();
  int32_t i = 0;
  for (; i + 4 <= n; i += 4) dot4(q, k + i * ks, k + (i + 1) * ks, k + (i + 2) * ks, k + (i + 3) * ks, D, scores + i);
  for (; i < n; ++i) scores[i] = dot(q, k + i * ks, D);
  for (int32_t j = 0; j < n; ++j) {
    scores[j] *= a.scale;
    block_max = std::max(block_max, scores[j]);
  }
  const float m_new = std::max(m, block_max);
  // First block: m is -inf, so alpha is 0 and the zeroed accumulator stays zero.
  const float alpha = std::exp(m - m_new);
  float sum = 0.0f;
  for (int32_t j = 0; j < n; ++j) {
    scores[j] = std::exp(scores[j] - m_new);
    sum += scores[j];
  }
  l = l * alpha + sum;
  m = m_new;
  if (alpha != 1.0f) scale_in_place(acc, alpha, D);
  int32_t j = 0;
  for (; j + 4 <= n; j += 4) axpy4(acc, scores + j, v + j * vs, v + (j + 1) * vs, v + (j + 2) * vs, v + (j + 3) * vs, D);
  for (; j < n; ++j) axpy(acc, scores[j], v + j * vs, D);
}

// Dequantises rows 0..n-1 of one block-head (`head` = the block's first row of this KV head,
// rows `row_stride` elements apart) into out [n, head_dim].
[[gnu::always_inline]] inline void dequantize_rows(const TileArgs& a, const char* head, int64_t row_stride, int32_t n,
                                                   float* __restrict out) {
  const int32_t D = a.head_dim;
  const int64_t es = sdk::kv::element_size(a.kv_dtype);
  const float* fp8 = a.kv_dtype == LOOM_DTYPE_FP8_E4M3 ? sdk::kv::fp8_e4m3_table().data() : nullptr;
  for (int32_t r = 0; r < n; ++r) {
    const char* row = head + r * row_stride * es;
    // int8: the block-head's scale (slot stride 0); fp8: this row's.
    const float scale = sdk::kv::has_scales(a.kv_dtype)
                            ? sdk::kv::load_scale(a.kv_dtype, head + a.scale_offset + r * a.scale_slot_stride)
                            : 1.0f;
    float* __restrict o = out + static_cast<int64_t>(r) * D;
    switch (a.kv_dtype) {
      case LOOM_DTYPE_F16: {
        const auto* h = reinterpret_cast<const uint16_t*>(row);
        for (int32_t d = 0; d < D; ++d) o[d] = sdk::f16_to_f32(h[d]);
        break;
      }
      case LOOM_DTYPE_BF16: {
        const auto* h = reinterpret_cast<const uint16_t*>(row);
        for (int32_t d = 0; d < D; ++d) {
          const uint32_t bits = static_cast<uint32_t>(h[d]) << 16;
          std::memcpy(&o[d], &bits, sizeof(float));
        }
        break;
      }
      case LOOM_DTYPE_I8: {
        const auto* q = reinterpret_cast<const int8_t*>(row);
        for (int32_t d = 0; d < D; ++d) o[d] = static_cast<float>(q[d]) * scale;
        break;
      }
      default: {  // fp8_e4m3 (the plugin admits nothing else here)
        const auto* q = reinterpret_cast<const uint8_t*>(row);
        for (int32_t d = 0; d < D; ++d) o[d] = fp8[q[d]] * scale;
        break;
      }
    }
  }
}

// The oldest position a row at `pos` attends to.
inline int32_t window_first(const TileArgs& a, int32_t pos) {
  return a.window > 0 && pos >= a.window ? pos - a.window + 1 : 0;
}

// One KV head (a.kv_heads is ignored).
void tile_one_head(const TileArgs& a, TileScratch& s) {
  const int32_t R = a.rows, D = a.head_dim, bs = a.block_size;
  if (R <= 0) return;
  s.acc.assign(static_cast<size_t>(R) * D, 0.0f);
  s.m.assign(static_cast<size_t>(R), -std::numeric_limits<float>::infinity());
  s.l.assign(static_cast<size_t>(R), 0.0f);
  if (s.scores.size() < static_cast<size_t>(bs)) s.scores.resize(static_cast<size_t>(bs));
  const bool in_place = a.kv_dtype == LOOM_DTYPE_F32;
  if (!in_place && s.k_block.size() < static_cast<size_t>(bs) * D) {
    s.k_block.resize(static_cast<size_t>(bs) * D);
    s.v_block.resize(static_cast<size_t>(bs) * D);
  }
  const int64_t es = sdk::kv::element_size(a.kv_dtype);
  // Keys min_first .. max_pos of the partition are read: the union of the rows' ranges in it.
  int32_t max_pos = 0, min_first = INT32_MAX;
  for (int32_t r = 0; r < R; ++r) {
    max_pos = std::max(max_pos, std::min(a.row_pos[r], a.kv_end - 1));
    min_first = std::min(min_first, std::max(window_first(a, a.row_pos[r]), a.kv_begin));
  }

  // Block order is the same for every row (ascending, from the first block any row's window
  // reaches in the partition), so each row sees the same sequence of rescalings whatever tile it
  // is in.
  for (int32_t b = min_first / bs; b <= max_pos / bs && min_first <= max_pos; ++b) {
    const int64_t block = a.block_table[b];
    const int32_t first = b * bs;
    // [block_size, .., head_dim] rows of this KV head, in place (f32) or dequantised.
    const float* k;
    const float* v;
    int64_t ks, vs;
    if (in_place) {
      k = static_cast<const float*>(a.k_head) + block * a.k_block_stride;
      v = static_cast<const float*>(a.v_head) + block * a.v_block_stride;
      ks = a.k_row_stride;
      vs = a.v_row_stride;
    } else {
      const int32_t rows = std::min(bs, max_pos - first + 1);
      dequantize_rows(a, static_cast<const char*>(a.k_head) + block * a.k_block_stride * es, a.k_row_stride,
                             rows, s.k_block.data());
      dequantize_rows(a, static_cast<const char*>(a.v_head) + block * a.v_block_stride * es, a.v_row_stride,
                             rows, s.v_block.data());
      k = s.k_block.data();
      v = s.v_block.data();
      ks = vs = D;
    }
    for (int32_t r = 0; r < R; ++r) {
      // Causal mask by position: keys first .. row_pos[r] of this block; a window also drops the
      // block's keys before window_first, and the partition its keys outside [kv_begin, kv_end).
      const int32_t n = std::min(bs, std::min(a.row_pos[r], a.kv_end - 1) - first + 1);
      const int32_t skip = std::clamp(std::max(window_first(a, a.row_pos[r]), a.kv_begin) - first, 0, bs);
      if (n - skip <= 0) continue;
      fold_block(a, a.q_rows[r], k + skip * ks, ks, v + skip * vs, vs, n - skip, s.m[static_cast<size_t>(r)],
                 s.l[static_cast<size_t>(r)], s.acc.data() + static_cast<size_t>(r) * D, s.scores.data());
    }
  }
  store_rows(a, s.acc.data(), s.m.data(), s.l.data());
}

// Head by head: the results do not depend on how heads are grouped into items.
void tile_portable(const TileArgs& a, TileScratch& s) {
  const int32_t per_head = a.rows / a.kv_heads;
  const int64_t es = sdk::kv::element_size(a.kv_dtype);
  for (int32_t h = 0; h < a.kv_heads; ++h) {
    TileArgs one = a;
    one.q_rows += h * per_head;
    one.out_rows += h * per_head;
    one.part_rows += h * per_head;
    one.row_pos += h * per_head;
    one.rows = per_head;
    one.k_head = static_cast<const char*>(a.k_head) + h * a.k_head_stride * es;
    one.v_head = static_cast<const char*>(a.v_head) + h * a.v_head_stride * es;
    one.kv_heads = 1;
    // Scales: after the block's data, this head's scale_head_stride bytes further on, from a head
    // pointer head_stride elements further on.
    one.scale_offset = a.scale_offset + h * (a.scale_head_stride - a.k_head_stride * es);
    tile_one_head(one, s);
  }
}

}  // namespace

void store_rows(const TileArgs& a, const float* acc, const float* m, const float* l) {
  const int32_t D = a.head_dim;
  for (int32_t r = 0; r < a.rows; ++r) {
    const int32_t pos = a.row_pos[r], first = window_first(a, pos);
    if (std::max(first, a.kv_begin) > std::min(pos, a.kv_end - 1)) continue;  // no key in the partition
    const float* row_acc = acc + static_cast<size_t>(r) * D;
    if (first >= a.kv_begin && pos < a.kv_end) {
      // A true division, not a multiply by 1/l: when weights are exact (equal scores) the mean is too.
      float* o = a.out_rows[r];
      for (int32_t d = 0; d < D; ++d) o[d] = row_acc[d] / l[r];
    } else {
      float* p = a.part_rows[r];
      std::memcpy(p, row_acc, sizeof(float) * static_cast<size_t>(D));
      p[D] = m[r];
      p[D + 1] = l[r];
    }
  }
}

TileKernel select_tile_kernel(bool allow_simd, const char** name) {
#if defined(__x86_64__) && defined(__GNUC__)
  // Every AVX2 CPU has F16C (Haswell, Zen and later), but it is checked all the same.
  if (allow_simd && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
      __builtin_cpu_supports("f16c")) {
    if (name != nullptr) *name = "avx2+fma+f16c";
    return tile_avx2;
  }
#else
  (void)allow_simd;
#endif
  if (name != nullptr) *name = "portable";
  return tile_portable;
}

}  // namespace loom::flash_cpu
