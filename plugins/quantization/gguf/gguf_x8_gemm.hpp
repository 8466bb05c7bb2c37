// The GEMM over x8-layout weights (gguf_repack.hpp), generic in how a block's exact int32 sums
// are formed: F::sums<R>(q, a, b, off, out) gives, lane = weight row, the 8 sums of block b
// against R activation rows. Included inside an anonymous namespace by each kernel file, after
// its `#pragma GCC target` and before its F types (it also gives them bcast4), so each
// instruction set compiles its own copy.
//
// Per (activation row, weight row) the blocks fold in order: acc = fma(d_w * d_a, float(sum),
// acc), block 0, 1, ... whatever n is, so kernels whose F gives the same integers give the same
// bits.
//
// GEMM: R activation rows (R = 4, fewer at the end) share each loaded and unpacked weight
// chunk; their int sums and float accumulators, the weight registers and temporaries fit the 16
// ymm registers. Decode (R = 1) streams each group's bytes once, in address order. Every block
// read asks for the bytes kStreamAhead on (gguf_stream_prefetch.hpp), which run on through the
// group's scales into the next group.

// 4 activation bytes broadcast to the 8 lanes (one per weight row).
inline __attribute__((always_inline)) __m256i bcast4(const int8_t* p) {
  int32_t v;
  std::memcpy(&v, p, 4);
  return _mm256_set1_epi32(v);
}

// R activation rows x one 8-row group, all nb blocks; y rows ys apart, n_out (<= 8) columns.
// Per (row, lane) the blocks fold in order: acc = fma(d_w * d_a, float(sum), acc).
template <class F, int R>
inline __attribute__((always_inline)) void group_rows(const uint8_t* grp, int64_t nb, const g::BlockQ8_0* const* a,
                                                      const float* const* da, const int32_t* const* off, float* y,
                                                      int64_t ys, int64_t n_out) {
  const auto* scales = reinterpret_cast<const __m128i*>(grp + nb * F::kQuantBytes);
  __m256 acc[R];
  for (int r = 0; r < R; ++r) acc[r] = _mm256_setzero_ps();
  for (int64_t b = 0; b < nb; ++b) {
    // The group is read as one stream, quants then scales (16 bytes a block): prefetching at the
    // block's share of that whole span keeps kStreamAhead bytes ahead across the scales and into
    // the next group's first blocks (with the quant offset alone, blocks 4-7 of every group were
    // never asked for).
    stream_prefetch<static_cast<uintptr_t>(F::kQuantBytes + 16)>(grp + b * (F::kQuantBytes + 16));
    __m256i sum[R];
    F::template sums<R>(grp + b * F::kQuantBytes, a, b, off, sum);
    const __m256 dw = _mm256_cvtph_ps(_mm_load_si128(scales + b));
    for (int r = 0; r < R; ++r)
      acc[r] = _mm256_fmadd_ps(_mm256_mul_ps(dw, _mm256_set1_ps(da[r][b])), _mm256_cvtepi32_ps(sum[r]), acc[r]);
  }
  for (int r = 0; r < R; ++r) {
    if (n_out == kGroupRows) {
      _mm256_storeu_ps(y + r * ys, acc[r]);
    } else {
      alignas(32) float tmp[kGroupRows];
      _mm256_store_ps(tmp, acc[r]);
      for (int64_t c = 0; c < n_out; ++c) y[r * ys + c] = tmp[c];
    }
  }
}

template <class F, int R>
void rows_x_groups(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
                   const ActivationBlockInfo& info, int64_t t0, float* y, int64_t ys) {
  const int64_t nb = w.n_blocks;
  const g::BlockQ8_0* a[R];
  const float* da[R];
  const int32_t* off[R];
  for (int r = 0; r < R; ++r) {
    a[r] = reinterpret_cast<const g::BlockQ8_0*>(xq + (t0 + r) * xq_row_bytes);
    da[r] = info.d + (t0 + r) * nb;
    off[r] = info.offset + (t0 + r) * nb;
  }
  for (int64_t grp = g0; grp < g1; ++grp) {
    const int64_t j0 = grp * kGroupRows;
    const int64_t n_out = w.n_rows - j0 < kGroupRows ? w.n_rows - j0 : kGroupRows;
    group_rows<F, R>(w.group(grp), nb, a, da, off, y + t0 * ys + (j0 - g0 * kGroupRows), ys, n_out);
  }
}

template <class F>
void gemm_x8(const PackedWeight& w, int64_t g0, int64_t g1, const uint8_t* xq, int64_t xq_row_bytes,
             const ActivationBlockInfo& info, int64_t n, float* y, int64_t ys) {
  int64_t t = 0;
  for (; t + 4 <= n; t += 4) rows_x_groups<F, 4>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys);
  switch (n - t) {
    case 3: rows_x_groups<F, 3>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 2: rows_x_groups<F, 2>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    case 1: rows_x_groups<F, 1>(w, g0, g1, xq, xq_row_bytes, info, t, y, ys); break;
    default: break;
  }
}

