// y = x W^T for weights stored in a quantized form that dequantizes element by element to f32
// (int8 w8a16, int4, fp8): the threaded driver and the portable kernels. Each format supplies
// how a tile of rows dequantizes (portable and, on x86-64, AVX2) and an AVX2 tile kernel that
// dequantizes in registers (dequant_gemm_avx2.hpp).
//
// Batch invariance: every path computes y[t][o] from the same dequantized values w(o, k) in one
// fixed order: 8 lanes, lane l summing k = l, l+8, ... in
// increasing k; the lanes joined by ((0+1)+(2+3))+((4+5)+(6+7)); then the k % 8 tail in order.
// Dequantizing in registers (few rows) or into an L2 tile first (many rows) therefore gives the
// same bits, and a row's result never depends on the batch it came in. The portable kernel
// multiplies and adds separately (-ffp-contract=off), the AVX2 one fuses them: the two agree to
// rounding, each is invariant on its own.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <vector>

#include "loom/sdk_core.hpp"
#include "quant_plugin.hpp"

namespace loom_quant {

// Output features per work item: a multiple of every register block, small enough that the
// dequantized tile (48 x in floats) stays in L2.
constexpr int64_t kTile = 48;
// From this many input rows on, a tile is dequantized once into memory and every row streams
// past it; below it, weights are dequantized in registers (nothing else touches memory).
constexpr int64_t kDequantTileFrom = 8;
// Each thread's share of the output features is a multiple of this (every register block, 3,
// 4, 6 and 12 rows, divides it), so only the last share ends in a partial block.
constexpr int64_t kShareAlign = 12;

// How many shares `out` features are cut into for `threads` threads: one per thread, fewer
// when there are not kShareAlign features for each.
inline int64_t feature_shares(int64_t threads, int64_t out) {
  return std::max<int64_t>(1, std::min(threads, (out + kShareAlign - 1) / kShareAlign));
}

// First output feature of share i (i <= shares; i == shares gives out): equal shares rounded
// to kShareAlign, so no thread waits while another finishes a spare tile (2048 features in
// 48-row tiles over 2 threads used to be 22 tiles against 20 2/3).
inline int64_t share_begin(int64_t i, int64_t shares, int64_t out) {
  if (i >= shares) return out;
  return std::min(out, (out * i / shares + kShareAlign / 2) / kShareAlign * kShareAlign);
}

// y[t * ys + j] = dot(x + t * xs, rows[j]), t < n, j < n_rows, rows of `in` floats.
using TileF32 = void (*)(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n, int64_t in,
                         float* y, int64_t ys);

template <class W>
struct DequantKernels {
  // Rows [o0, o0 + n_rows) dequantized in registers against n rows of x; null when absent.
  void (*tile_q)(const W& w, int64_t o0, int64_t n_rows, const float* x, int64_t xs, int64_t n, float* y, int64_t ys);
  // dst[j * in + k] = w(o0 + j, k): a tile dequantized into memory.
  void (*dequant)(const W& w, int64_t o0, int64_t n_rows, float* dst);
  TileF32 tile_f32;
  const char* name;  // "portable" or "avx2+fma"
};

inline float lane_sum(const float* a) { return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])); }

// out[r] = dot(x row r, w) for R rows of x, each row's arithmetic the same for every R.
template <int R>
inline void dot_rows(const float* __restrict w, const float* __restrict x, int64_t xs, int64_t in, float* out) {
  constexpr int kLanes = 8;
  float acc[R][kLanes] = {};
  int64_t i = 0;
  for (; i + kLanes <= in; i += kLanes) {
    for (int r = 0; r < R; ++r) {
      const float* xr = x + r * xs + i;
      for (int l = 0; l < kLanes; ++l) acc[r][l] += xr[l] * w[i + l];
    }
  }
  for (int r = 0; r < R; ++r) {
    float s = lane_sum(acc[r]);
    for (int64_t k = i; k < in; ++k) s += x[r * xs + k] * w[k];
    out[r] = s;
  }
}

inline void tile_f32_portable(const float* const* rows, int64_t n_rows, const float* x, int64_t xs, int64_t n,
                              int64_t in, float* y, int64_t ys) {
  constexpr int kRows = 4;
  float res[kRows];
  int64_t t = 0;
  for (; t + kRows <= n; t += kRows) {
    for (int64_t j = 0; j < n_rows; ++j) {
      dot_rows<kRows>(rows[j], x + t * xs, xs, in, res);
      for (int r = 0; r < kRows; ++r) y[(t + r) * ys + j] = res[r];
    }
  }
  for (; t < n; ++t) {
    for (int64_t j = 0; j < n_rows; ++j) {
      dot_rows<1>(rows[j], x + t * xs, xs, in, res);
      y[t * ys + j] = res[0];
    }
  }
}

// y = x W^T over all out features: one equal share of the features per host thread, cut into
// tiles of kTile rows; scratch holds one dequantized tile per thread, reused from call to call.
template <class W>
void dequant_linear(const loom::sdk::Host& host, const DequantKernels<W>& kernels, const W& w, int64_t in, int64_t out,
                    const LinearArgs& a, std::vector<std::vector<float>>& scratch) {
  const int64_t shares = feature_shares(host.num_threads(), out);
  host.parallel_for(shares, [&](int64_t begin, int64_t end, int32_t thread) {
    if (thread < 0 || static_cast<size_t>(thread) >= scratch.size())
      throw Error(LOOM_ERR_INTERNAL, "parallel_for thread index out of range");
    std::vector<float>& tile_buf = scratch[static_cast<size_t>(thread)];  // [kTile, in]
    std::array<const float*, kTile> rows{};
    const int64_t o_end = share_begin(end, shares, out);
    for (int64_t o0 = share_begin(begin, shares, out); o0 < o_end; o0 += kTile) {
      const int64_t n_rows = std::min(kTile, o_end - o0);
      if (kernels.tile_q != nullptr && a.n < kDequantTileFrom) {
        kernels.tile_q(w, o0, n_rows, a.x, a.xs, a.n, a.y + o0, a.ys);
        continue;
      }
      if (tile_buf.size() < static_cast<size_t>(kTile * in)) tile_buf.resize(static_cast<size_t>(kTile * in));
      kernels.dequant(w, o0, n_rows, tile_buf.data());
      for (int64_t j = 0; j < n_rows; ++j) rows[static_cast<size_t>(j)] = tile_buf.data() + j * in;
      kernels.tile_f32(rows.data(), n_rows, a.x, a.xs, a.n, in, a.y + o0, a.ys);
    }
  });
}

inline bool cpu_has_avx2_fma() {
#if defined(__x86_64__) && defined(__GNUC__)
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

}  // namespace loom_quant
