// The shared-x prefill's packed_gemm (none_panel.hpp: PackedGemm) over a kernel file's
// row_block<Load> and its LoadF16 / LoadBF16 / LoadF32: row block m of y, every k block of the
// packed x in increasing k, so each element's chain runs k = 0 .. in-1 whatever the tiles.
// Included inside an anonymous namespace by each kernel file, after its row_block, so each
// instruction set compiles its own copy.

template <class Load>
void packed_gemm(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n, int64_t m,
                 float* y, int64_t ys) {
  const int64_t kb = block_k(w.dtype);
  const int64_t m0 = m * kBlockRows;
  const int64_t mn = n - m0 < kBlockRows ? n - m0 : kBlockRows;
  for (int64_t k0 = 0, b = 0; k0 < w.in; k0 += kb, ++b) {
    const int64_t kn = w.in - k0 < kb ? w.in - k0 : kb;
    row_block<Load>(w, p_begin, p_end, xp + packed_x_offset(n, w.in, w.dtype, m, b), mn, k0, kn, y + m0 * ys, ys);
  }
}

// packed_gemm on the weight's element type.
inline void packed_gemm_of_dtype(const PanelView& w, int64_t p_begin, int64_t p_end, const float* xp, int64_t n,
                                 int64_t m, float* y, int64_t ys) {
  switch (w.dtype) {
    case LOOM_DTYPE_F16: packed_gemm<LoadF16>(w, p_begin, p_end, xp, n, m, y, ys); break;
    case LOOM_DTYPE_BF16: packed_gemm<LoadBF16>(w, p_begin, p_end, xp, n, m, y, ys); break;
    default: packed_gemm<LoadF32>(w, p_begin, p_end, xp, n, m, y, ys); break;
  }
}
