// The engine's step-time model: what a step costs in wall time as a function of what it computes,
//   t = a + b * prefill_tokens + c * decode_tokens + d * kv_tokens       (microseconds)
// where kv_tokens is the context attended to (every scheduled sequence's length after the step).
// The engine measures each step and observe()s it; the fit is least squares over a sliding window
// of the last steps with every coefficient >= 0 (a negative cost would let a scheduler plan steps
// it cannot run), exact for four unknowns: every support set is tried. Schedulers read it through
// loom_sched_context::predicted_step_us; admission control and /metrics read it from HTTP threads.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <span>

#include "core/engine/slo_snapshot.hpp"

namespace loom {

struct StepSample {
  int32_t prefill_tokens = 0;
  int32_t decode_tokens = 0;
  int64_t kv_tokens = 0;
  int64_t wall_us = 0;
};

// The non-negative least-squares fit of the samples (coefficients all 0 when there are none).
StepCoefficients fit_step_time(std::span<const StepSample> samples);

// Predicted microseconds of a step under `c`, rounded to the nearest microsecond.
int64_t predict_step_us(const StepCoefficients& c, int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens);

class StepTimeModel {
 public:
  static constexpr size_t kDefaultWindow = 256;
  explicit StepTimeModel(size_t window = kDefaultWindow) : window_(window) {}

  // Engine thread: one measured step; refits over the window.
  void observe(const StepSample& sample);
  // Any thread. 0 before the first sample.
  int64_t predict_us(int32_t prefill_tokens, int32_t decode_tokens, int64_t kv_tokens) const;
  StepCoefficients coefficients() const;

 private:
  size_t window_;
  mutable std::mutex mutex_;
  std::deque<StepSample> samples_;  // the last window_ steps, oldest first
  StepCoefficients coef_;
  int64_t seen_ = 0;
};

}  // namespace loom
