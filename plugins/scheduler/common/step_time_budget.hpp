// Shared by the continuous and slo schedulers (scheduler/common): the time a step has planned so
// far, in the terms of the host's step-time model (loom_sched_context::predicted_step_us, interface
// 1.2), and the longest prefill chunk that keeps the step within a time limit. Header-only.
#pragma once

#include <algorithm>
#include <cstdint>

#include "loom/sdk_scheduler.hpp"

namespace loom_sched {

class StepTimeBudget {
 public:
  // limit_us <= 0: no limit.
  StepTimeBudget(const loom::sdk::SchedStep& step, int64_t limit_us) : step_(step), limit_us_(limit_us) {}

  // Records `n` scheduled tokens of a sequence whose context is `context_after` tokens after them.
  void add(bool decode, int32_t n, int64_t context_after) {
    (decode ? decode_ : prefill_) += n;
    kv_ += context_after;
  }

  int64_t predicted_us() const { return step_.predicted_step_us(prefill_, decode_, kv_); }
  int32_t prefill_tokens() const { return prefill_; }

  // The most of `n` prompt tokens, after `computed` computed ones, this step can take and stay
  // within the limit: all n without a limit or while the model knows nothing; else the largest
  // chunk that fits (predictions grow with the chunk), but never below min(n, floor) while the
  // step has no prefill yet, so prompts progress even when decodes alone fill the limit.
  int32_t largest_chunk(int32_t n, int64_t computed, int32_t floor) const {
    if (limit_us_ <= 0 || n <= 0) return n;
    auto fits = [&](int32_t c) {
      return step_.predicted_step_us(prefill_ + c, decode_, kv_ + computed + c) <= limit_us_;
    };
    if (step_.predicted_step_us(prefill_ + n, decode_, kv_ + computed + n) == 0 || fits(n)) return n;
    int32_t lo = 0, hi = n;  // fits(lo) or lo == 0; !fits(hi)
    while (hi - lo > 1) {
      const int32_t mid = lo + (hi - lo) / 2;
      (fits(mid) ? lo : hi) = mid;
    }
    return prefill_ == 0 ? std::max(lo, std::min(n, floor)) : lo;
  }

 private:
  const loom::sdk::SchedStep& step_;
  int64_t limit_us_;
  int32_t prefill_ = 0;
  int32_t decode_ = 0;
  int64_t kv_ = 0;
};

}  // namespace loom_sched
