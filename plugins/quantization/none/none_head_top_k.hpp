// linear_top_k of quantization/none (quantization interface 1.5): each row's k largest outputs of
// a weight, in loom::sdk::select_top_k's order, with exactly linear's bits.
//
// Screened (exact compute): every output is estimated by a screen under a rigorous bound: the
// int8 copy's (none_head_int8.hpp; AVX2, or AVX512-VNNI) or the bf16 one's (none_head_screen.hpp;
// AVX512-BF16), lo_o <= y_o <= up_o. With T the k-th largest lower
// end, an output whose upper end is below T has k outputs strictly above it, so the exact top k
// lies among the candidates {o : up_o >= T}; each candidate's panel is computed for that row by
// linear's own kernel (same chains, same bits), and select_top_k_of picks from them. A row whose
// screen is not finite, whose bound does not hold, or whose candidates pass out / 8 (near-equal
// rows) is computed in full by linear with the other such rows, then selected.
// By linear: linear into scratch, then select_top_k per row (compute = "bf16", other simd
// choices, CPUs without AVX512-BF16, or k above out / 8: the bits of that configuration's linear).
//
// Rows go in chunks of kChunkRows (the screen keeps [rows][out] floats); scratch is kept across
// calls, so a warm call allocates nothing.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "loom/sdk_core.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"

namespace loom_none {

// linear on n rows of x (row stride xs) into y [n][out], exactly linear's bits.
using LinearRows = std::function<void(const float* x, int64_t xs, int64_t n, float* y)>;

// Which screen runs: the int8 copy and its kernel, or (int8 == nullptr) the bf16 screen on the
// exact panels (AVX512-BF16 only); and which form of the scans (the same answers from each).
enum class Scans { kPortable, kAvx2, kAvx512 };
// `pairs`: the head is compute bf16's pair panels and linear the pair kernels (int8 screen only:
// the copy made from those panels, rows bounded as HeadChain::kPairs).
struct Screening {
  const Int8Head* int8 = nullptr;
  Int8Screen int8_kernel = nullptr;
  Scans scans = Scans::kPortable;
  bool pairs = false;
};

class HeadTopK {
 public:
  static constexpr int64_t kChunkRows = 64;

  explicit HeadTopK(int32_t threads) : per_thread_(static_cast<size_t>(threads > 0 ? threads : 1)) {}

  // Whether the screen can serve this selection: few enough k for candidates to be few, `in` in
  // the bound's range.
  static bool screens(int64_t out, int64_t in, int32_t k) { return int64_t{k} * 8 <= out && in <= (1 << 16); }

  // The norms of w (head_norms over the host's threads) and their largest (infinite when one is
  // not finite, so no row passes pack_screen_row).
  static HeadNorms norms_of(const loom::sdk::Host& host, const PanelView& w, bool pairs = false);

  // Screened selection for rows [0, n) of x into ids/values [n][k]; `exact` is the kernel linear
  // computes with. The bf16 screen and AVX-512 scans only after cpu_has_avx512_bf16() and
  // cpu_has_avx512f(); the int8 kernels after their own checks.
  void screened(const loom::sdk::Host& host, PanelGemm exact, const PanelView& w, const HeadNorms& norms,
                const Screening& how, const float* x, int64_t xs, int64_t n, int32_t k, int32_t* ids, float* values,
                const LinearRows& linear);

  // linear's rows, then select_top_k on each.
  void by_linear(const loom::sdk::Host& host, int64_t out, const float* x, int64_t xs, int64_t n, int32_t k,
                 int32_t* ids, float* values, const LinearRows& linear);

 private:
  struct PerThread {
    std::vector<float> run;       // the threshold's k largest lower ends
    std::vector<int32_t> ids;     // candidates
    std::vector<float> values;    // their exact values
    std::vector<float> gemm;      // the exact kernel's scratch
    alignas(64) float panel[16];  // one panel's exact outputs for one row
  };

  PerThread& thread_scratch(int32_t thread);
  // Row t of the chunk: candidates, their exact values, the selection. False: the row needs a
  // full linear.
  bool refine(PerThread& pt, PanelGemm exact, const PanelView& w, const HeadNorms& norms, const Screening& how,
              const float* x, int64_t t, int32_t k, int32_t* ids, float* values);
  // Packs the chunk's rows for the screen and marks in full_ those it cannot bound; true when any
  // row is screened.
  bool pack_rows(const PanelView& w, const HeadNorms& norms, const Screening& how, const float* x, int64_t xs,
                 int64_t m);
  // Rows of the chunk marked in full_: linear, then select_top_k.
  void full_rows(const loom::sdk::Host& host, int64_t out, int64_t in, const float* x, int64_t xs, int64_t m,
                 int32_t k, int32_t* ids, float* values, const LinearRows& linear);

  std::vector<PerThread> per_thread_;
  std::vector<uint32_t> xp_;      // the chunk's x as bf16 pairs [rows][pairs_of(in)] (bf16 screen)
  std::vector<int8_t> xq_;        // the chunk's x in int8 blocks [rows][in_pad] (int8 screen)
  std::vector<float> xe_;         // their scales [rows][in_pad / 32]
  std::vector<int32_t> xsum_;     // their sums [rows][in_pad / 32]
  std::vector<RowBound> bounds_;  // per row of the chunk
  std::vector<uint8_t> full_;     // per row of the chunk: computed by linear instead
  std::vector<float> s_;          // screened outputs [rows][16 n_panels]
  std::vector<int64_t> rows_;     // the chunk's rows computed by linear
  std::vector<float> rows_x_;     // those rows of x, gathered
  std::vector<float> y_;          // linear's outputs [rows][out]
};

}  // namespace loom_none
