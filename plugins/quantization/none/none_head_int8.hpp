// The int8 screen of quantization/none's linear_top_k (none_head_top_k.hpp): every output of a
// classifier head estimated from an int8 copy of the head, under a rigorous bound on its distance
// from linear's value, so that only the outputs the bound cannot rule out are computed exactly.
//
// Why a copy: one decode row reads the whole head at the memory's speed, and a 128k-262k
// vocabulary head is most of a small model's bytes. The bf16 screen (none_head_screen.hpp) reads
// the exact path's own panels, as many bytes as linear; the int8 copy is half of an f16/bf16 head
// (a quarter of an f32 one) and its integer dot products run on every AVX2 CPU (maddubs), four
// multiply-adds per lane and instruction with AVX512-VNNI (vpdpbusd). It costs that half again in
// memory, which `head_screen = "bf16"` or `"off"` gives back.
//
// The copy: per output o a scale d_o = max_k |W[o][k]| / 127 and q_o[k] = round(W[o][k] / d_o) in
// [-127, 127] (d_o below the smallest normal float is taken as 0, q_o = 0). Stored biased, as the
// unsigned operand of vpdpbusd, in panels of 16 outputs, 4 consecutive k per output lane:
//   q[((p * k4s + k4) * 16 + j) * 4 + i] = q_{16 p + j}[4 k4 + i] + 128,   k4s = in_pad / 4,
// with k padded by q = 0 to in_pad, a multiple of kInt8Block, and the padding outputs of the last
// panel q = 0, d = 0.
// A row of x: blocks of kInt8Block k, each with a scale e_b = max |x_b| / 127 (below the smallest
// normal: 0) and q_x = round(x / e_b) in [-127, 127], and sum_b = the sum of the block's q_x.
// The estimate, for each output lane (every kernel takes exactly these steps, so all give the
// same bits): acc = 0; for b = 0 .. in_pad / 32 - 1: S_b = sum over the block of q_o[k] q_x[k]
// (an exact int32); acc = fma(float(S_b), e_b, acc); then s = acc * d_o.
// Bound (none_head_int8.cpp derives it): |y_o - s_o| <= c N_o + a with N_o = ||W[o]||_2 (the
// same norms as the bf16 screen), c and a from the row (pack_int8_row); screen_interval applies it.
// Under compute = "bf16" the copy is made from the pair panels' bf16 weights, the row from
// bf16(x), and y is the pair kernels' vdpbf16ps chain (HeadChain::kPairs).
#pragma once

#include <cstdint>
#include <vector>

#include "none_head_screen.hpp"
#include "none_panel.hpp"

namespace loom_none {

constexpr int64_t kInt8Block = 32;  // k values of x per scale

// The int8 copy of a head. Owns its bytes.
struct Int8Head {
  int64_t out = 0, in = 0, in_pad = 0, n_panels = 0;
  std::vector<uint8_t> q;    // [n_panels][in_pad / 4][16][4], biased by 128
  std::vector<float> scale;  // d_o [n_panels * 16]
  float rho = 0.0F;          // max over o of ||W[o] - d_o q_o|| / ||W[o]||, rounded up
};

// Sizes h for w (the exact path's panels: f32, f16 or bf16).
void int8_head_shape(const PanelView& w, Int8Head* h);
// Fills panels [p_begin, p_end) of h from w (disjoint ranges may run on different threads) and
// returns their largest ||W[o] - d_o q_o|| / ||W[o]||, rounded up (0 for zero rows; infinity when
// a weight is not finite). `pairs`: w is compute bf16's pair panels (none_bf16.hpp), and W the
// bf16 weights they hold.
double int8_head_panels(const PanelView& w, int64_t p_begin, int64_t p_end, Int8Head* h, bool pairs = false);

// Which chain linear computes, so which rounding the bound covers: the exact path's FMA chain on
// x, or (kPairs) compute bf16's vdpbf16ps chain on bf16(x) and the bf16 weights.
enum class HeadChain { kExact, kPairs };

// Packs row x [in] into q [in_pad] (zero past in), e and sum [in_pad / 32], and writes its bound
// for a head of ratio rho whose largest row norm is max_norm. Under kPairs the row is rounded to
// bf16 first (as the pair kernels round it) and quantized from that. False, with *b unset, when
// the bound does not hold or is useless: x not finite, ||x|| max_norm near the float range, in
// beyond 2^16.
bool pack_int8_row(const float* x, int64_t in, int64_t in_pad, float rho, float max_norm, int8_t* q, float* e,
                   int32_t* sum, RowBound* b, HeadChain chain = HeadChain::kExact);

// s[t * ss + 16 p + j] for rows t < n (row t of x: q + t * in_pad, e and sum + t * in_pad / 32)
// and every lane j < 16 of panels [p_begin, p_end) of h; ss >= 16 h.n_panels.
using Int8Screen = void (*)(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                            const int32_t* sum, int64_t n, float* s, int64_t ss);

// The reference: the steps above, one lane at a time.
void head_screen_int8_portable(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                               const int32_t* sum, int64_t n, float* s, int64_t ss);

// The scans of the bf16 screen's contract (none_head_screen.hpp), one output at a time with
// screen_interval: the reference, and for CPUs without AVX2.
float screen_threshold_portable(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                                float* run);
int64_t screen_candidates_portable(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                                   int32_t* cand, int64_t max);

#if defined(__x86_64__) && defined(__GNUC__)
// The same scans 8 outputs at a time (none_head_scan_avx2.cpp): only after cpu_has_avx2_fma_f16c().
float screen_threshold_avx2(const float* s, const float* norms, int64_t out, const RowBound& b, int32_t k,
                            float* run);
int64_t screen_candidates_avx2(const float* s, const float* norms, int64_t out, const RowBound& b, float t,
                               int32_t* cand, int64_t max);
// maddubs on |q_o| and q_x with q_o's sign: only after cpu_has_avx2_fma_f16c().
void head_screen_int8_avx2(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                           const int32_t* sum, int64_t n, float* s, int64_t ss);
// vpdpbusd on the biased q_o and q_x, less 128 sum_b: only after cpu_has_avx512_vnni().
bool cpu_has_avx512_vnni();
void head_screen_int8_vnni(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                           const int32_t* sum, int64_t n, float* s, int64_t ss);
namespace emulated {  // the VNNI file compiled against SIMDe, for tests on CPUs without it
void head_screen_int8_vnni(const Int8Head& h, int64_t p_begin, int64_t p_end, const int8_t* q, const float* e,
                           const int32_t* sum, int64_t n, float* s, int64_t ss);
}  // namespace emulated
#endif

}  // namespace loom_none
