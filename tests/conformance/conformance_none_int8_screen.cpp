// quantization/none's int8 screen of linear_top_k at kernel level (none_head_int8.hpp):
//   - the copy (int8_head_shape, int8_head_panels), for f32/f16/bf16 heads, odd and even in, out
//     not a multiple of 16: every scale d_o = max_k |W[o][k]| / 127 (in float; 0 below the
//     smallest normal), every biased byte q_o[k] + 128 at its place in the panels, 128 in the k
//     padding and for the padding outputs (scale 0), the same bytes when the panels are filled in
//     two ranges, and the returned ratio at least max ||W[o] - d_o q_o|| / ||W[o]|| (in double)
//     and at most 1.0001 times it; 0 for zero rows, infinite for a row holding a NaN or infinity;
//     ties rounded to even;
//   - pack_int8_row: the block scales, q (zero past in) and sums of the definition, block scales
//     below the smallest normal as 0 with q = 0, and refusals (bound left unset) of non-finite x,
//     rho or max_norm, in beyond 2^16 and ||x|| max_norm beyond the float range;
//   - the screen kernels: the portable reference takes the header's steps (checked bit for bit
//     against the steps written out here), and the AVX2 kernel, the AVX512-VNNI kernel and its
//     SIMDe emulation give the reference's bits (memcmp) for n = 1..20 rows and split panel
//     ranges, rows with blocks of very different magnitude, padding lanes exactly 0, nothing
//     written outside the panel range;
//   - the bound: every output inside screen_interval of linear's value (the exact FMA chain), on
//     adversarial rows (x a weight row, one huge element, all equal, tiny and subnormal blocks;
//     weights with one huge element per row); a crafted weight row whose quantization errors all
//     add up, and a crafted row of x whose do, each come within 10% of the bound; on a random
//     [2000, 256] head few outputs' intervals reach the best output's lower end (a useful screen);
//   - the portable scans: threshold and candidates exactly those of screen_interval applied one by
//     one, NaN for a non-finite screen, -1 past the candidate limit.
// q = round(v / d) rounds to nearest, ties to even (std::nearbyint), as none_head_int8.cpp does.
// h.rho is the returned ratio rounded up to a float (the tightest value the contract allows; the
// plugin keeps it scaled by 1 + 2^-20 first, a larger one).
// "VnniNative" runs where the CPU has AVX512-VNNI (skipped, saying so, elsewhere); "VnniEmulated"
// runs the VNNI kernel compiled against SIMDe on any AVX2 CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "loom/sdk_half.hpp"
#include "none_head_int8.hpp"
#include "none_head_screen.hpp"
#include "none_screen_test_support.hpp"

namespace {

using loom_none_test::exact_dot;
using loom_none_test::Head;
using loom_none_test::make_head;
using loom_none_test::name_of;

using loom_none::Int8Head;
using loom_none::Int8Screen;
using loom_none::kInt8Block;
using loom_none::kPanel;
using loom_none::PanelView;
using loom_none::RowBound;


std::string where(loom_dtype dtype, int64_t out, int64_t in) {
  return std::string(name_of(dtype)) + " [" + std::to_string(out) + ", " + std::to_string(in) + "]";
}

// The rounding of q = round(v / d): nearest, ties to even.
float round_q(float v) { return std::nearbyint(v); }

// The scale of a row or block whose largest magnitude is m: m / 127, 0 below the smallest normal.
float scale_of(float m) {
  const float d = m / 127.0F;
  return d < 0x1p-126F ? 0.0F : d;
}

// Int8Head::rho from the returned ratio: the smallest float not below it (the plugin keeps a
// larger one, the ratio scaled by 1 + 2^-20 and rounded; a larger rho only widens the bound).
float rho_of(double ratio) {
  float r = static_cast<float>(ratio);
  if (static_cast<double>(r) < ratio) r = std::nextafter(r, INFINITY);
  return r;
}

// The copy of head with its ratio (returned in *ratio) and h.rho set from it.
Int8Head int8_copy(const Head& head, double* ratio) {
  Int8Head h;
  loom_none::int8_head_shape(head.view, &h);
  *ratio = loom_none::int8_head_panels(head.view, 0, head.view.n_panels, &h);
  h.rho = rho_of(*ratio);
  return h;
}

std::vector<float> norms_of(const Head& head) {
  std::vector<float> norms(static_cast<size_t>(head.view.n_panels * kPanel));
  loom_none::head_norms(head.view, 0, head.view.n_panels, norms.data());
  return norms;
}

// Rows of x packed by pack_int8_row: q [n][in_pad], e and sum [n][in_pad / 32], bounds [n].
struct Rows {
  int64_t n = 0, in_pad = 0;
  std::vector<int8_t> q;
  std::vector<float> e;
  std::vector<int32_t> sum;
  std::vector<RowBound> b;
};

// Packs rows [0, n) of x [n][in] (a gtest failure for each row refused).
Rows pack_rows(const std::vector<float>& x, int64_t n, int64_t in, const Int8Head& h, float max_norm) {
  Rows r;
  r.n = n;
  r.in_pad = h.in_pad;
  const int64_t nb = h.in_pad / kInt8Block;
  r.q.assign(static_cast<size_t>(n * h.in_pad), int8_t{99});
  r.e.assign(static_cast<size_t>(n * nb), NAN);
  r.sum.assign(static_cast<size_t>(n * nb), -7);
  r.b.assign(static_cast<size_t>(n), RowBound{-1.0F, -1.0F});
  for (int64_t t = 0; t < n; ++t)
    EXPECT_TRUE(loom_none::pack_int8_row(x.data() + t * in, in, h.in_pad, h.rho, max_norm, r.q.data() + t * h.in_pad,
                                         r.e.data() + t * nb, r.sum.data() + t * nb, &r.b[static_cast<size_t>(t)]))
        << "row " << t << " refused";
  return r;
}

// The estimate of the header, step by step: S_b exact, acc = fma(S_b, e_b, acc), s = acc d_o.
float reference_lane(const Int8Head& h, const Rows& r, int64_t t, int64_t o) {
  const int64_t p = o / kPanel, j = o % kPanel, k4s = h.in_pad / 4, nb = h.in_pad / kInt8Block;
  float acc = 0.0F;
  for (int64_t b = 0; b < nb; ++b) {
    int32_t sb = 0;
    for (int64_t k = b * kInt8Block; k < (b + 1) * kInt8Block; ++k) {
      const int32_t qo = int32_t{h.q[static_cast<size_t>(((p * k4s + k / 4) * kPanel + j) * 4 + k % 4)]} - 128;
      sb += qo * int32_t{r.q[static_cast<size_t>(t * h.in_pad + k)]};
    }
    acc = std::fma(static_cast<float>(sb), r.e[static_cast<size_t>(t * nb + b)], acc);
  }
  return acc * h.scale[static_cast<size_t>(o)];
}

// The shapes of the kernel and copy tests: odd and even in, out not a multiple of 16, one k block
// and many.
const std::vector<std::pair<int64_t, int64_t>> kShapes = {{37, 91}, {70, 130}, {33, 257}, {16, 1},
                                                         {5, 2},   {200, 64}, {24, 700}};

// Random weights in [-1, 1] with, where there are enough rows: row 1 all zero, row 2 all of one
// magnitude (q_o = +-127 throughout), row 3 one huge element (q_o mostly 0).
std::vector<float> random_weights(std::mt19937_64& rng, int64_t out, int64_t in) {
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  std::vector<float> w(static_cast<size_t>(out * in));
  for (auto& v : w) v = u(rng);
  if (out > 3) {
    std::fill_n(w.begin() + in, in, 0.0F);
    for (int64_t k = 0; k < in; ++k) w[static_cast<size_t>(2 * in + k)] = k % 3 == 0 ? -0.75F : 0.75F;
    w[static_cast<size_t>(3 * in + in / 2)] = 300.0F;
  }
  return w;
}

// Random rows of x in [-2, 2] with outliers: some blocks scaled by 1e4 or 1e-30 or made
// subnormal, single huge elements, a row all equal.
std::vector<float> random_rows(std::mt19937_64& rng, int64_t n, int64_t in) {
  std::uniform_real_distribution<float> u(-2.0F, 2.0F);
  std::vector<float> x(static_cast<size_t>(n * in));
  for (auto& v : x) v = u(rng);
  const int64_t nb = (in + kInt8Block - 1) / kInt8Block;
  for (int64_t t = 0; t < n; ++t) {
    float* xt = x.data() + t * in;
    const int64_t b = t % nb, b0 = b * kInt8Block, b1 = std::min(in, b0 + kInt8Block);
    if (t % 3 == 1)
      for (int64_t k = b0; k < b1; ++k) xt[k] *= 1e4F;
    if (t % 5 == 3)
      for (int64_t k = b0; k < b1; ++k) xt[k] *= t % 2 == 0 ? 1e-30F : 1e-40F;  // odd t: subnormal, e_b = 0
    if (t % 4 == 2) xt[(t * 7) % in] = -1e5F;
    if (t == 9) std::fill_n(xt, in, 0.625F);
  }
  return x;
}

// ---------------------------------------------------------------------------------------------
// The copy.

// Checks h (filled from head) against the definition and returns the true largest ratio (double).
double check_copy(const Head& head, const Int8Head& h, const std::string& at) {
  const int64_t out = head.view.out, in = head.view.in;
  EXPECT_EQ(h.out, out) << at;
  EXPECT_EQ(h.in, in) << at;
  EXPECT_EQ(h.n_panels, head.view.n_panels) << at;
  EXPECT_EQ(h.in_pad % kInt8Block, 0) << at;
  EXPECT_GE(h.in_pad, in) << at;
  EXPECT_EQ(h.q.size(), static_cast<size_t>(h.n_panels * h.in_pad * kPanel)) << at;
  EXPECT_EQ(h.scale.size(), static_cast<size_t>(h.n_panels * kPanel)) << at;
  if (h.q.size() != static_cast<size_t>(h.n_panels * h.in_pad * kPanel) ||
      h.scale.size() != static_cast<size_t>(h.n_panels * kPanel))
    return NAN;
  const int64_t k4s = h.in_pad / 4;
  double worst = 0.0;
  int64_t bad = 0;
  for (int64_t o = 0; o < h.n_panels * kPanel; ++o) {
    const int64_t p = o / kPanel, j = o % kPanel;
    const float* wo = o < out ? head.w.data() + o * in : nullptr;
    bool finite = true;
    float m = 0.0F;
    for (int64_t k = 0; wo != nullptr && k < in; ++k) {
      finite = finite && std::isfinite(wo[k]);
      m = std::max(m, std::fabs(wo[k]));
    }
    if (!finite) {
      worst = INFINITY;
      continue;  // the bytes of a non-finite row are not defined
    }
    const float d = scale_of(m);
    EXPECT_EQ(h.scale[static_cast<size_t>(o)], d) << at << " output " << o << ": max |w| " << m;
    double err = 0.0, norm = 0.0;
    for (int64_t k = 0; k < h.in_pad; ++k) {
      const float w = wo != nullptr && k < in ? wo[k] : 0.0F;
      const float q = d == 0.0F ? 0.0F : round_q(w / d);
      const int want = static_cast<int>(q) + 128;
      const int got = h.q[static_cast<size_t>(((p * k4s + k / 4) * kPanel + j) * 4 + k % 4)];
      if (got != want && bad++ < 10)
        ADD_FAILURE() << at << " output " << o << " k " << k << ": w " << w << ", d " << d << ", byte " << got
                      << ", want " << want;
      const double e = static_cast<double>(w) - static_cast<double>(d) * static_cast<double>(q);
      err += e * e;
      norm += static_cast<double>(w) * w;
    }
    if (norm > 0.0) worst = std::max(worst, std::sqrt(err) / std::sqrt(norm));
  }
  return worst;
}

TEST(NoneInt8Head, CopyMatchesItsDefinition) {
  std::mt19937_64 rng(41);
  for (const auto& [out, in] : kShapes) {
    const std::vector<float> src = random_weights(rng, out, in);
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const std::string at = where(dtype, out, in);
      const Head head = make_head(src, dtype, out, in);
      double ratio = 0;
      const Int8Head h = int8_copy(head, &ratio);
      const double want = check_copy(head, h, at);
      ASSERT_TRUE(std::isfinite(want)) << at;
      EXPECT_GE(ratio, want) << at << ": the ratio is not rounded up";
      EXPECT_LE(ratio, want * 1.0001) << at << ": the ratio is rounded up by too much";
      EXPECT_GT(want, 0.0) << at;
      // Two ranges, the second first: the same bytes, and the larger ratio is the whole one's.
      for (const int64_t split : {int64_t{1}, head.view.n_panels / 2}) {
        Int8Head h2;
        loom_none::int8_head_shape(head.view, &h2);
        const double r2 = loom_none::int8_head_panels(head.view, split, head.view.n_panels, &h2);
        const double r1 = loom_none::int8_head_panels(head.view, 0, split, &h2);
        EXPECT_EQ(h2.q, h.q) << at << " split at panel " << split;
        EXPECT_EQ(std::memcmp(h2.scale.data(), h.scale.data(), h.scale.size() * sizeof(float)), 0)
            << at << " split at panel " << split;
        EXPECT_EQ(std::max(r1, r2), ratio) << at << " split at panel " << split;
      }
    }
  }
}

TEST(NoneInt8Head, ZeroTinyAndNonFiniteRows) {
  const int64_t out = 21, in = 45;
  std::mt19937_64 rng(43);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  // All zero: ratio 0, scales 0, every byte 128.
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
    const std::string at = where(dtype, out, in) + ", all zero";
    const Head head = make_head(std::vector<float>(static_cast<size_t>(out * in), 0.0F), dtype, out, in);
    double ratio = -1;
    const Int8Head h = int8_copy(head, &ratio);
    EXPECT_EQ(ratio, 0.0) << at;
    EXPECT_EQ(check_copy(head, h, at), 0.0) << at;
    EXPECT_TRUE(std::all_of(h.q.begin(), h.q.end(), [](uint8_t v) { return v == 128; })) << at;
    EXPECT_TRUE(std::all_of(h.scale.begin(), h.scale.end(), [](float v) { return v == 0.0F; })) << at;
  }
  // f32 rows whose scale falls below the smallest normal (d = 0, q = 0: ratio 1) or just above it.
  {
    std::vector<float> src(static_cast<size_t>(out * in));
    for (auto& v : src) v = u(rng);
    for (int64_t k = 0; k < in; ++k) {
      src[static_cast<size_t>(4 * in + k)] = u(rng) * 1e-37F;  // max / 127 < 2^-126
      src[static_cast<size_t>(5 * in + k)] = k == 0 ? 0x1p-118F : u(rng) * 0x1p-118F;  // max / 127 above 2^-126
      src[static_cast<size_t>(6 * in + k)] = u(rng) * 0x1p-140F;  // subnormal weights
    }
    const std::string at = where(LOOM_DTYPE_F32, out, in) + ", tiny rows";
    const Head head = make_head(src, LOOM_DTYPE_F32, out, in);
    double ratio = -1;
    const Int8Head h = int8_copy(head, &ratio);
    const double want = check_copy(head, h, at);
    EXPECT_EQ(h.scale[4], 0.0F) << at;
    EXPECT_GT(h.scale[5], 0.0F) << at;
    EXPECT_EQ(want, 1.0) << at;
    EXPECT_GE(ratio, want) << at;
    EXPECT_LE(ratio, want * 1.0001) << at;
  }
  // A NaN or an infinity anywhere: an infinite ratio, for that range only.
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16})
    for (const float bad : {NAN, INFINITY, -INFINITY}) {
      std::vector<float> src(static_cast<size_t>(out * in));
      for (auto& v : src) v = u(rng);
      src[static_cast<size_t>(19 * in + 7)] = bad;  // panel 1
      const std::string at = where(dtype, out, in) + ", " + std::to_string(bad);
      const Head head = make_head(src, dtype, out, in);
      Int8Head h;
      loom_none::int8_head_shape(head.view, &h);
      const double r0 = loom_none::int8_head_panels(head.view, 0, 1, &h);
      const double r1 = loom_none::int8_head_panels(head.view, 1, 2, &h);
      EXPECT_TRUE(std::isfinite(r0)) << at;
      EXPECT_EQ(r1, INFINITY) << at;
    }
}

// ---------------------------------------------------------------------------------------------
// pack_int8_row.

// Checks one packed row against the definition.
void check_packed(const float* x, int64_t in, int64_t in_pad, const int8_t* q, const float* e, const int32_t* sum,
                  const std::string& at) {
  for (int64_t b = 0; b < in_pad / kInt8Block; ++b) {
    float m = 0.0F;
    for (int64_t k = b * kInt8Block; k < std::min(in, (b + 1) * kInt8Block); ++k) m = std::max(m, std::fabs(x[k]));
    const float eb = scale_of(m);
    EXPECT_EQ(e[b], eb) << at << " block " << b << ": max |x| " << m;
    int32_t s = 0;
    for (int64_t k = b * kInt8Block; k < (b + 1) * kInt8Block; ++k) {
      const int32_t want = k < in && eb != 0.0F ? static_cast<int32_t>(round_q(x[k] / eb)) : 0;
      EXPECT_EQ(int32_t{q[k]}, want) << at << " k " << k << ": x " << (k < in ? x[k] : 0.0F) << ", e " << eb;
      s += want;
    }
    EXPECT_EQ(sum[b], s) << at << " block " << b;
  }
}

// round(v / d) rounds to nearest, ties to even, in the copy and in pack_int8_row (d = 1 here).
TEST(NoneInt8Head, RoundsTiesToEven) {
  const std::vector<float> v = {127.0F, 2.5F, -3.5F, 0.5F, -0.5F, 1.5F};
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
    const Head head = make_head(v, dtype, 1, 6);
    double ratio = 0;
    const Int8Head h = int8_copy(head, &ratio);
    ASSERT_EQ(h.in_pad, 32) << name_of(dtype);
    EXPECT_EQ(h.scale[0], 1.0F) << name_of(dtype);
    EXPECT_EQ(std::vector<int>({h.q[0], h.q[1], h.q[2], h.q[3], h.q[64], h.q[65]}),
              std::vector<int>({255, 130, 124, 128, 128, 130}))
        << name_of(dtype);
  }
  std::vector<int8_t> q(32, int8_t{99});
  float e = NAN;
  int32_t sum = -7;
  RowBound b{-1.0F, -1.0F};
  ASSERT_TRUE(loom_none::pack_int8_row(v.data(), 6, 32, 0.01F, 1.0F, q.data(), &e, &sum, &b));
  EXPECT_EQ(e, 1.0F);
  EXPECT_EQ(std::vector<int>(q.begin(), q.begin() + 6), std::vector<int>({127, 2, -4, 0, 0, 2}));
  EXPECT_EQ(sum, 127);
}

TEST(NoneInt8Head, PackRowFollowsItsDefinition) {
  std::mt19937_64 rng(47);
  for (const int64_t in : {int64_t{1}, int64_t{2}, int64_t{31}, int64_t{32}, int64_t{33}, int64_t{257}}) {
    const std::vector<float> x = random_rows(rng, 12, in);
    const int64_t in_pad = (in + kInt8Block - 1) / kInt8Block * kInt8Block;
    for (const int64_t pad : {in_pad, in_pad + kInt8Block}) {  // a block wholly past in: e = 0, q = 0
      const int64_t nb = pad / kInt8Block;
      for (int64_t t = 0; t < 12; ++t) {
        const std::string at = "in " + std::to_string(in) + ", in_pad " + std::to_string(pad) + ", row " +
                               std::to_string(t);
        std::vector<int8_t> q(static_cast<size_t>(pad), int8_t{99});
        std::vector<float> e(static_cast<size_t>(nb), NAN);
        std::vector<int32_t> sum(static_cast<size_t>(nb), -7);
        RowBound b{-1.0F, -1.0F};
        ASSERT_TRUE(loom_none::pack_int8_row(x.data() + t * in, in, pad, 0.01F, 3.0F, q.data(), e.data(),
                                             sum.data(), &b))
            << at;
        check_packed(x.data() + t * in, in, pad, q.data(), e.data(), sum.data(), at);
        EXPECT_GT(b.c, 0.0F) << at;
        EXPECT_GT(b.a, 0.0F) << at;
        EXPECT_TRUE(std::isfinite(b.c) && std::isfinite(b.a)) << at;
      }
    }
  }
  // Every block below the smallest normal scale: all zero, still a bound (its a and c cover x).
  const std::vector<float> tiny = {1e-39F, -3e-40F, 2e-38F, 0.0F, -1e-45F};
  std::vector<int8_t> q(32, int8_t{99});
  float e = NAN;
  int32_t sum = -7;
  RowBound b{-1.0F, -1.0F};
  ASSERT_TRUE(loom_none::pack_int8_row(tiny.data(), 5, 32, 0.01F, 3.0F, q.data(), &e, &sum, &b));
  EXPECT_EQ(e, 0.0F);
  EXPECT_EQ(sum, 0);
  EXPECT_TRUE(std::all_of(q.begin(), q.end(), [](int8_t v) { return v == 0; }));
}

TEST(NoneInt8Head, PackRowRefusesWhatItCannotBound) {
  const std::vector<float> x = {1.0F, 3.14159F, -2e-3F, 65504.0F, 0.1F};
  std::vector<int8_t> q(32);
  float e = 0;
  int32_t sum = 0;
  const auto refused = [&](const float* xr, int64_t in, float rho, float max_norm) {
    RowBound b{-1.0F, -2.0F};
    const bool ok = loom_none::pack_int8_row(xr, in, 32, rho, max_norm, q.data(), &e, &sum, &b);
    if (!ok) {
      EXPECT_EQ(b.c, -1.0F) << "a refused row's bound was written";
      EXPECT_EQ(b.a, -2.0F) << "a refused row's bound was written";
    }
    return !ok;
  };
  EXPECT_FALSE(refused(x.data(), 5, 0.01F, 1.0F));
  for (const float bad : {NAN, INFINITY, -INFINITY}) {
    std::vector<float> xb = x;
    xb[2] = bad;
    EXPECT_TRUE(refused(xb.data(), 5, 0.01F, 1.0F)) << "x holding " << bad;
    EXPECT_TRUE(refused(x.data(), 5, 0.01F, std::fabs(bad))) << "max_norm " << std::fabs(bad);
    EXPECT_TRUE(refused(x.data(), 5, std::fabs(bad), 1.0F)) << "rho " << std::fabs(bad);
  }
  // A finite rho so large that c overflows float: refused, and (as every refusal) *b unset.
  EXPECT_TRUE(refused(x.data(), 5, 1e38F, 1.0F)) << "rho 1e38: c is not a float";
  const std::vector<float> big(4, 1e20F);  // ||x|| N = 2e40 > 2^126: a chain could overflow
  EXPECT_TRUE(refused(big.data(), 4, 0.01F, 1e20F));
  EXPECT_FALSE(refused(big.data(), 4, 0.01F, 1e12F));  // 2e32, about 2^107
  const int64_t wide_in = (int64_t{1} << 16) + 1, wide_pad = (wide_in + 31) / 32 * 32;
  const std::vector<float> wide(static_cast<size_t>(wide_in), 0.5F);
  std::vector<int8_t> wq(static_cast<size_t>(wide_pad));
  std::vector<float> we(static_cast<size_t>(wide_pad / 32));
  std::vector<int32_t> ws(static_cast<size_t>(wide_pad / 32));
  RowBound b{-1.0F, -2.0F};
  EXPECT_FALSE(
      loom_none::pack_int8_row(wide.data(), wide_in, wide_pad, 0.01F, 1.0F, wq.data(), we.data(), ws.data(), &b));
  EXPECT_TRUE(b.c == -1.0F && b.a == -2.0F) << "a refused row's bound was written";
  EXPECT_TRUE(loom_none::pack_int8_row(wide.data(), wide_in - 1, wide_pad - 32, 0.01F, 1.0F, wq.data(), we.data(),
                                       ws.data(), &b))
      << "in = 2^16 is in range";
}

// ---------------------------------------------------------------------------------------------
// The kernels.

// kernel against the steps of the header (the test's own reference_lane) for the kShapes heads,
// n = 1..20 rows and the panels in one range or split after the first: bit for bit, padding lanes
// 0, and nothing written past the range in a call or past 16 n_panels in a row.
void check_kernel(Int8Screen kernel) {
  std::mt19937_64 rng(53);
  for (const auto& [out, in] : kShapes) {
    const std::vector<float> src = random_weights(rng, out, in);
    const std::vector<float> x = random_rows(rng, 20, in);
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const Head head = make_head(src, dtype, out, in);
      double ratio = 0;
      const Int8Head h = int8_copy(head, &ratio);
      const std::vector<float> norms = norms_of(head);
      const Rows r = pack_rows(x, 20, in, h, *std::max_element(norms.begin(), norms.end()));
      const int64_t nb = h.in_pad / kInt8Block, lanes = h.n_panels * kPanel, ss = lanes + kPanel;
      std::vector<float> want(static_cast<size_t>(20 * ss), NAN);
      for (int64_t t = 0; t < 20; ++t)
        for (int64_t o = 0; o < lanes; ++o) want[static_cast<size_t>(t * ss + o)] = reference_lane(h, r, t, o);
      for (int64_t n = 1; n <= 20; ++n) {
        const std::string at = where(dtype, out, in) + ", n = " + std::to_string(n);
        std::vector<float> s(static_cast<size_t>(n * ss), NAN);
        const int64_t split = n % 2 == 0 ? 1 : h.n_panels;  // even n: the panels split after the first
        kernel(h, 0, split, r.q.data(), r.e.data(), r.sum.data(), n, s.data(), ss);
        for (int64_t t = 0; t < n; ++t)
          for (int64_t o = split * kPanel; o < ss; ++o)
            ASSERT_TRUE(std::isnan(s[static_cast<size_t>(t * ss + o)])) << at << ": row " << t << " lane " << o
                                                                         << " written outside the range";
        kernel(h, split, h.n_panels, r.q.data(), r.e.data(), r.sum.data(), n, s.data(), ss);
        for (int64_t t = 0; t < n; ++t) {
          for (int64_t o = out; o < lanes; ++o) ASSERT_EQ(s[static_cast<size_t>(t * ss + o)], 0.0F) << at << " padding";
          for (int64_t o = lanes; o < ss; ++o)
            ASSERT_TRUE(std::isnan(s[static_cast<size_t>(t * ss + o)])) << at << ": row " << t << " past the lanes";
          for (int64_t o = 0; o < lanes; ++o) {
            const float got = s[static_cast<size_t>(t * ss + o)], ref = want[static_cast<size_t>(t * ss + o)];
            ASSERT_EQ(std::memcmp(&got, &ref, sizeof(float)), 0)
                << at << ": row " << t << " output " << o << ": " << got << ", want " << ref << " (e_0 "
                << r.e[static_cast<size_t>(t * nb)] << ")";
          }
        }
      }
    }
  }
}

// kernel against the portable reference on one large head (more rows, panels and blocks than
// kShapes), memcmp on the whole output.
void check_against_portable(Int8Screen kernel) {
  std::mt19937_64 rng(59);
  const int64_t out = 333, in = 1000, n = 13;
  const std::vector<float> src = random_weights(rng, out, in);
  const std::vector<float> x = random_rows(rng, n, in);
  const Head head = make_head(src, LOOM_DTYPE_BF16, out, in);
  double ratio = 0;
  const Int8Head h = int8_copy(head, &ratio);
  const std::vector<float> norms = norms_of(head);
  const Rows r = pack_rows(x, n, in, h, *std::max_element(norms.begin(), norms.end()));
  const int64_t ss = h.n_panels * kPanel;
  std::vector<float> want(static_cast<size_t>(n * ss), NAN), got(want.size(), NAN);
  loom_none::head_screen_int8_portable(h, 0, h.n_panels, r.q.data(), r.e.data(), r.sum.data(), n, want.data(), ss);
  kernel(h, 0, 7, r.q.data(), r.e.data(), r.sum.data(), n, got.data(), ss);
  kernel(h, 7, h.n_panels, r.q.data(), r.e.data(), r.sum.data(), n, got.data(), ss);
  EXPECT_EQ(std::memcmp(got.data(), want.data(), want.size() * sizeof(float)), 0);
}

TEST(NoneInt8Screen, PortableTakesTheSteps) {
  check_kernel(loom_none::head_screen_int8_portable);
}

#if defined(__x86_64__) && defined(__GNUC__)
bool has_avx2_fma_f16c() {
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}

TEST(NoneInt8Screen, Avx2EqualsPortable) {
  if (!loom_none::cpu_has_avx2_fma_f16c())
    GTEST_SKIP() << "this CPU has no AVX2+FMA+F16C: the AVX2 kernel does not run";
  check_kernel(loom_none::head_screen_int8_avx2);
  check_against_portable(loom_none::head_screen_int8_avx2);
}

TEST(NoneInt8Screen, VnniNative) {
  if (!loom_none::cpu_has_avx512_vnni())
    GTEST_SKIP() << "this CPU has no AVX512-VNNI; the VnniEmulated test covers the kernel";
  check_kernel(loom_none::head_screen_int8_vnni);
  check_against_portable(loom_none::head_screen_int8_vnni);
}

TEST(NoneInt8Screen, VnniEmulated) {
  if (!has_avx2_fma_f16c()) GTEST_SKIP() << "the emulation is built for AVX2+FMA+F16C";
  check_kernel(loom_none::emulated::head_screen_int8_vnni);
  check_against_portable(loom_none::emulated::head_screen_int8_vnni);
}
#endif

// ---------------------------------------------------------------------------------------------
// The bound.

// Every output of every row of x inside screen_interval of linear's value; returns, for `probe`
// (row t, output o) when given, |y - s| / (up - s): how much of the bound its error takes.
double check_bound(const Head& head, const std::vector<float>& x, int64_t n, const std::string& at,
                   std::pair<int64_t, int64_t> probe = {-1, -1}) {
  const int64_t out = head.view.out, in = head.view.in;
  double ratio = 0;
  const Int8Head h = int8_copy(head, &ratio);
  const std::vector<float> norms = norms_of(head);
  const Rows r = pack_rows(x, n, in, h, *std::max_element(norms.begin(), norms.end()));
  const int64_t ss = h.n_panels * kPanel;
  std::vector<float> s(static_cast<size_t>(n * ss), NAN);
  loom_none::head_screen_int8_portable(h, 0, h.n_panels, r.q.data(), r.e.data(), r.sum.data(), n, s.data(), ss);
  double taken = NAN;
  int64_t bad = 0;
  for (int64_t t = 0; t < n; ++t)
    for (int64_t o = 0; o < out; ++o) {
      const float got = s[static_cast<size_t>(t * ss + o)];
      float lo = 0, up = 0;
      loom_none::screen_interval(got, norms[static_cast<size_t>(o)], r.b[static_cast<size_t>(t)], &lo, &up);
      const float y = exact_dot(x.data() + t * in, head.w.data() + o * in, in);
      if (!(lo <= y && y <= up) && bad++ < 10)
        ADD_FAILURE() << at << ": row " << t << " output " << o << ": y " << y << " outside [" << lo << ", " << up
                      << "] (s " << got << ", c " << r.b[static_cast<size_t>(t)].c << ", a "
                      << r.b[static_cast<size_t>(t)].a << ", rho " << h.rho << ")";
      if (t == probe.first && o == probe.second)
        taken = std::fabs(static_cast<double>(y) - got) / (static_cast<double>(up) - got);
    }
  return taken;
}

TEST(NoneInt8Screen, EveryOutputInsideItsInterval) {
  std::mt19937_64 rng(61);
  std::uniform_real_distribution<float> u(-1.0F, 1.0F);
  for (const auto& [out, in] : kShapes) {
    // Row 0 crafted: 127/128, then (k % 4 + 0.45) / 128, which rounds down by 0.45 d_o (d_o = 2^-7
    // exactly): all its errors have one sign, and it has the head's largest ratio. Row 1 of x: all
    // 1, quantized exactly, so the pair's error is nearly ||x|| ||W[0] - d_0 q_0||, the bound.
    std::vector<float> src = random_weights(rng, out, in);
    src[0] = 127.0F / 128;
    for (int64_t k = 1; k < in; ++k) src[static_cast<size_t>(k)] = (static_cast<float>(k % 4) + 0.45F) / 128;
    const int64_t n = 20;
    std::vector<float> x = random_rows(rng, n, in);
    std::fill_n(x.begin() + in, in, 1.0F);
    std::fill_n(x.begin() + 2 * in, in, 0.5F);
    std::fill_n(x.begin() + 3 * in, in, 0.0F);
    x[static_cast<size_t>(3 * in + in / 3)] = 1e25F;  // one huge element
    for (int64_t k = 0; k < in; ++k) x[static_cast<size_t>(4 * in + k)] = 1e-39F * u(rng);  // all subnormal
    for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
      const std::string at = where(dtype, out, in);
      Head head = make_head(src, dtype, out, in);
      // Rows 5 and 6 of x: the largest weight row and the crafted one, as stored.
      std::vector<float> xd = x;
      int64_t big = 0;
      double big_sq = -1;
      for (int64_t o = 0; o < out; ++o) {
        double sq = 0;
        for (int64_t k = 0; k < in; ++k) sq += static_cast<double>(head.w[o * in + k]) * head.w[o * in + k];
        if (sq > big_sq) {
          big_sq = sq;
          big = o;
        }
      }
      std::copy_n(head.w.begin() + big * in, in, xd.begin() + 5 * in);
      std::copy_n(head.w.begin(), in, xd.begin() + 6 * in);
      const double taken = check_bound(head, xd, n, at, {1, 0});
      if (in >= 16) {
        EXPECT_GE(taken, 0.9) << at << ": the crafted pair's error against its bound";
      }
      // The same head with one huge element in every row (q_o mostly 0, ratios near 1).
      std::vector<float> spiky = src;
      for (int64_t o = 0; o < out; ++o) spiky[static_cast<size_t>(o * in + (o * 5) % in)] = 4000.0F * u(rng);
      check_bound(make_head(spiky, dtype, out, in), xd, n, at + ", one huge weight per row");
      // A head the copy holds exactly (rows of +-1, row 0 all 1: ratio about 2^-24) against row 7
      // of x crafted as row 0 of W was: 127 at each block's start, then k % 4 + 0.45, so e_b = 1
      // and x - x^ is 0.45 throughout; the pair's error is nearly ||x - x^|| N_0, the bound.
      std::vector<float> signs(static_cast<size_t>(out * in), 1.0F);
      for (int64_t i = in; i < out * in; ++i) signs[static_cast<size_t>(i)] = u(rng) < 0.0F ? -1.0F : 1.0F;
      std::vector<float> xe = xd;
      for (int64_t k = 0; k < in; ++k)
        xe[static_cast<size_t>(7 * in + k)] = k % kInt8Block == 0 ? 127.0F : static_cast<float>(k % 4) + 0.45F;
      const double taken_x = check_bound(make_head(signs, dtype, out, in), xe, n, at + ", exact head", {7, 0});
      if (in >= 16) {
        EXPECT_GE(taken_x, 0.9) << at << ": the crafted row of x's error against its bound";
      }
    }
  }
}

TEST(NoneInt8Screen, FewOutputsReachTheBest) {
  std::mt19937_64 rng(67);
  std::normal_distribution<float> g(0.0F, 1.0F);
  const int64_t out = 2000, in = 256, n = 8;
  std::vector<float> src(static_cast<size_t>(out * in)), x(static_cast<size_t>(n * in));
  for (auto& v : src) v = g(rng);
  for (auto& v : x) v = g(rng);
  for (const loom_dtype dtype : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_BF16}) {
    const Head head = make_head(src, dtype, out, in);
    double ratio = 0;
    const Int8Head h = int8_copy(head, &ratio);
    const std::vector<float> norms = norms_of(head);
    const Rows r = pack_rows(x, n, in, h, *std::max_element(norms.begin(), norms.end()));
    const int64_t ss = h.n_panels * kPanel;
    std::vector<float> s(static_cast<size_t>(n * ss));
    loom_none::head_screen_int8_portable(h, 0, h.n_panels, r.q.data(), r.e.data(), r.sum.data(), n, s.data(), ss);
    for (int64_t t = 0; t < n; ++t) {
      std::vector<float> lo(static_cast<size_t>(out)), up(static_cast<size_t>(out));
      for (int64_t o = 0; o < out; ++o)
        loom_none::screen_interval(s[static_cast<size_t>(t * ss + o)], norms[static_cast<size_t>(o)],
                                   r.b[static_cast<size_t>(t)], &lo[static_cast<size_t>(o)],
                                   &up[static_cast<size_t>(o)]);
      const float best = *std::max_element(lo.begin(), lo.end());
      const auto reach = std::count_if(up.begin(), up.end(), [&](float v) { return v >= best; });
      EXPECT_LT(reach, 40) << name_of(dtype) << " row " << t << ": outputs whose interval reaches the best's (rho "
                           << h.rho << ")";
    }
  }
}

// ---------------------------------------------------------------------------------------------
// The portable scans, by the check the AVX-512 ones pass (none_screen_test_support.hpp).

TEST(NoneInt8Screen, PortableScans) {
  loom_none_test::check_scans(loom_none::screen_threshold_portable, loom_none::screen_candidates_portable);
}

TEST(NoneInt8Screen, Avx2Scans) {
  if (!loom_none::cpu_has_avx2_fma_f16c()) GTEST_SKIP() << "this CPU has no AVX2+FMA+F16C";
  loom_none_test::check_scans(loom_none::screen_threshold_avx2, loom_none::screen_candidates_avx2);
}

}  // namespace
