// What a speculator's proposal costs in wall time, for adaptive speculation. A draft model runs
// one forward pass per draft position for the requests still drafting, so a proposal asking
// requests for k_1 .. k_n drafts costs about
//   t = a * max_i k_i + b * sum_i k_i                                   (microseconds)
// (a: a draft step's fixed cost, b: each request's share of it); an n-gram or suffix lookup fits a
// and b near 0. The engine times every proposal and observe()s it; the fit is non-negative least
// squares over a sliding window. Samples that cannot tell a from b apart (one request at a time:
// max = sum) give them the same value, which prices a larger batch above its true cost (the safe
// side: speculation turns off early) until the batch varies.
// Catching up costs too: a draft model computes every token a request gained since its last
// proposal (a first proposal: the whole prompt), at c per token. Steady proposals (at most one
// round behind) fit a and b; the others fit c on what a and b leave over.
// The target's step-time model (step_time_model.hpp) excludes the proposal: the two are added
// when choosing k.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>

namespace loom {

struct ProposalSample {
  int32_t max_drafts = 0;  // the most drafts any request was asked for (the draft steps run)
  int64_t sum_drafts = 0;  // drafts asked for over all requests (the rows those steps compute)
  int64_t catch_up = 0;    // tokens the requests gained since their last proposal (all of them at the first)
  bool steady = false;     // every request at most one round behind: the drafting alone
  int64_t wall_us = 0;
};

struct ProposalCoefficients {
  double per_step_us = 0.0;           // a
  double per_request_draft_us = 0.0;  // b
  double per_catch_up_token_us = 0.0; // c: a speculator taking in tokens it has not seen
  int64_t samples = 0;                // proposals observed so far
  int64_t steady_samples = 0;         // of them, steady ones (a and b are 0 until the first)
};

class ProposalCostModel {
 public:
  static constexpr size_t kDefaultWindow = 128;
  explicit ProposalCostModel(size_t window = kDefaultWindow) : window_(window) {}

  // Engine thread: one timed proposal; refits over the window.
  void observe(const ProposalSample& sample);
  // Predicted microseconds of a steady proposal; 0 before the first sample and when nothing is asked.
  double predict_us(int32_t max_drafts, int64_t sum_drafts) const;
  // Predicted microseconds of catching up on `tokens`.
  double catch_up_us(int64_t tokens) const { return coef_.per_catch_up_token_us * static_cast<double>(tokens); }
  ProposalCoefficients coefficients() const { return coef_; }

 private:
  size_t window_;
  void fit_steady();
  void fit_catch_up();

  std::deque<ProposalSample> samples_;   // the last window_ steady proposals, oldest first
  std::deque<ProposalSample> catch_up_;  // the last window_ others
  ProposalCoefficients coef_;
};

}  // namespace loom
