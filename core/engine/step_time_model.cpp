#include "core/engine/step_time_model.hpp"

#include <array>
#include <cmath>
#include <limits>
#include <vector>

namespace loom {
namespace {

constexpr int kFeatures = 4;  // 1, prefill, decode, kv
using Vec = std::array<double, kFeatures>;
using Mat = std::array<Vec, kFeatures>;

Vec features(const StepSample& s) {
  return {1.0, static_cast<double>(s.prefill_tokens), static_cast<double>(s.decode_tokens),
          static_cast<double>(s.kv_tokens)};
}

// Solves the normal equations restricted to the features in `support` (a bit mask) by Gaussian
// elimination with partial pivoting. False when that subsystem is singular (a feature that never
// varies in the window, or two that vary together).
bool solve_on_support(const Mat& xtx, const Vec& xty, unsigned support, Vec& theta) {
  int idx[kFeatures];
  int n = 0;
  for (int j = 0; j < kFeatures; ++j)
    if (support & (1u << j)) idx[n++] = j;
  double a[kFeatures][kFeatures + 1];
  for (int r = 0; r < n; ++r) {
    for (int c = 0; c < n; ++c) a[r][c] = xtx[idx[r]][idx[c]];
    a[r][n] = xty[idx[r]];
  }
  for (int col = 0; col < n; ++col) {
    int pivot = col;
    for (int r = col + 1; r < n; ++r)
      if (std::fabs(a[r][col]) > std::fabs(a[pivot][col])) pivot = r;
    // Relative to the diagonal scale: the columns are normalised by the caller.
    if (std::fabs(a[pivot][col]) < 1e-9) return false;
    if (pivot != col)
      for (int c = 0; c <= n; ++c) std::swap(a[pivot][c], a[col][c]);
    for (int r = 0; r < n; ++r) {
      if (r == col) continue;
      const double f = a[r][col] / a[col][col];
      for (int c = col; c <= n; ++c) a[r][c] -= f * a[col][c];
    }
  }
  theta.fill(0.0);
  for (int r = 0; r < n; ++r) theta[idx[r]] = a[r][n] / a[r][r];
  return true;
}

}  // namespace

StepCoefficients fit_step_time(std::span<const StepSample> samples) {
  StepCoefficients out;
  out.samples = static_cast<int64_t>(samples.size());
  if (samples.empty()) return out;
  // Columns are scaled to a maximum of 1 so that token counts in the thousands and the intercept
  // condition the system alike; the coefficients are scaled back at the end.
  Vec scale{1.0, 0.0, 0.0, 0.0};
  for (const StepSample& s : samples) {
    const Vec x = features(s);
    for (int j = 1; j < kFeatures; ++j) scale[j] = std::max(scale[j], std::fabs(x[j]));
  }
  for (double& v : scale) v = v > 0 ? v : 1.0;
  Mat xtx{};
  Vec xty{};
  double yty = 0;
  for (const StepSample& s : samples) {
    Vec x = features(s);
    for (int j = 0; j < kFeatures; ++j) x[j] /= scale[j];
    const double y = static_cast<double>(s.wall_us);
    for (int r = 0; r < kFeatures; ++r) {
      for (int c = 0; c < kFeatures; ++c) xtx[r][c] += x[r] * x[c];
      xty[r] += x[r] * y;
    }
    yty += y * y;
  }
  // Exact NNLS for four unknowns: the constrained optimum is the unconstrained optimum on some
  // support with every coefficient >= 0; take the feasible support of least squared error.
  double best_sse = std::numeric_limits<double>::infinity();
  Vec best{};
  for (unsigned support = 1; support < (1u << kFeatures); ++support) {
    Vec theta{};
    if (!solve_on_support(xtx, xty, support, theta)) continue;
    bool feasible = true;
    for (double t : theta) feasible = feasible && t >= 0.0;
    if (!feasible) continue;
    // sse = y'y - 2 theta'X'y + theta'X'X theta
    double sse = yty;
    for (int r = 0; r < kFeatures; ++r) {
      sse -= 2.0 * theta[r] * xty[r];
      for (int c = 0; c < kFeatures; ++c) sse += theta[r] * xtx[r][c] * theta[c];
    }
    if (sse < best_sse - 1e-9 * std::max(1.0, yty)) {
      best_sse = sse;
      best = theta;
    }
  }
  out.base_us = best[0] / scale[0];
  out.per_prefill_token_us = best[1] / scale[1];
  out.per_decode_token_us = best[2] / scale[2];
  out.per_kv_token_us = best[3] / scale[3];
  return out;
}

int64_t predict_step_us(const StepCoefficients& c, int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens) {
  const double t = c.base_us + c.per_prefill_token_us * prefill_tokens + c.per_decode_token_us * decode_tokens +
                   c.per_kv_token_us * static_cast<double>(kv_tokens);
  return static_cast<int64_t>(std::llround(t));
}

void StepTimeModel::observe(const StepSample& sample) {
  std::lock_guard<std::mutex> lock(mutex_);
  samples_.push_back(sample);
  if (samples_.size() > window_) samples_.pop_front();
  ++seen_;
  const std::vector<StepSample> window(samples_.begin(), samples_.end());
  coef_ = fit_step_time(window);
  coef_.samples = seen_;
}

int64_t StepTimeModel::predict_us(int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens) const {
  std::lock_guard<std::mutex> lock(mutex_);
  if (seen_ == 0) return 0;
  return predict_step_us(coef_, prefill_tokens, decode_tokens, kv_tokens);
}

StepCoefficients StepTimeModel::coefficients() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return coef_;
}

}  // namespace loom
