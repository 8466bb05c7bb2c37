#include "core/engine/proposal_cost_model.hpp"

#include <algorithm>

namespace loom {
namespace {

// Below this, x1 and x2 are proportional in every sample: det relative to s11 * s22.
constexpr double kCollinear = 1e-9;

}  // namespace

void ProposalCostModel::observe(const ProposalSample& sample) {
  if (sample.max_drafts <= 0 || sample.sum_drafts <= 0 || sample.wall_us < 0) return;
  std::deque<ProposalSample>& into = sample.steady ? samples_ : catch_up_;
  into.push_back(sample);
  while (into.size() > window_) into.pop_front();
  if (sample.steady) {
    fit_steady();
    ++coef_.steady_samples;
  }
  fit_catch_up();
  ++coef_.samples;
}

// c: least squares of (wall - a max - b sum) = c catch_up over the catch-up samples, >= 0.
void ProposalCostModel::fit_catch_up() {
  double sxx = 0, sxy = 0;
  for (const ProposalSample& s : catch_up_) {
    const auto x = static_cast<double>(s.catch_up);
    sxx += x * x;
    sxy += x * (static_cast<double>(s.wall_us) - predict_us(s.max_drafts, s.sum_drafts));
  }
  coef_.per_catch_up_token_us = sxx > 0 ? std::max(0.0, sxy / sxx) : 0.0;
}

void ProposalCostModel::fit_steady() {
  // Normal equations of y = a x1 + b x2 (no intercept): [s11 s12; s12 s22] [a b]' = [s1y s2y]'.
  double s11 = 0, s12 = 0, s22 = 0, s1y = 0, s2y = 0;
  for (const ProposalSample& s : samples_) {
    const double x1 = s.max_drafts, x2 = static_cast<double>(s.sum_drafts), y = static_cast<double>(s.wall_us);
    s11 += x1 * x1, s12 += x1 * x2, s22 += x2 * x2, s1y += x1 * y, s2y += x2 * y;
  }
  double a = 0, b = 0;
  const double det = s11 * s22 - s12 * s12;
  if (det <= kCollinear * s11 * s22) {
    // max = sum (or a fixed ratio) in every sample: only their sum is determined. Half each:
    // exact on the shapes seen, and a larger batch is priced above its true cost, not below.
    const double g = (s1y + s2y) / (s11 + 2 * s12 + s22);  // least squares of y = g (x1 + x2)
    a = b = std::max(0.0, g);
  } else {
    a = (s1y * s22 - s2y * s12) / det, b = (s2y * s11 - s1y * s12) / det;
    // A negative coefficient would price extra drafts below nothing: fit the other one alone.
    if (a < 0) a = 0, b = std::max(0.0, s2y / s22);
    if (b < 0) b = 0, a = std::max(0.0, s1y / s11);
  }
  coef_.per_step_us = a;
  coef_.per_request_draft_us = b;
}

double ProposalCostModel::predict_us(int32_t max_drafts, int64_t sum_drafts) const {
  if (max_drafts <= 0 || sum_drafts <= 0) return 0.0;
  return coef_.per_step_us * max_drafts + coef_.per_request_draft_us * static_cast<double>(sum_drafts);
}

}  // namespace loom
