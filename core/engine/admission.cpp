#include "core/engine/admission.hpp"

#include <algorithm>

#include "core/engine/step_time_model.hpp"

namespace loom {
namespace {

constexpr int32_t kMaxRetryAfterS = 60;

int32_t retry_after(int64_t drain_us) {
  const int64_t s = (drain_us + 999'999) / 1'000'000;
  return static_cast<int32_t>(std::clamp<int64_t>(s, 1, kMaxRetryAfterS));
}

// Half a limit for best effort, never below one (a limit of 1 still admits into an empty queue).
int64_t limit_for(int64_t limit, bool best_effort) { return best_effort ? std::max<int64_t>(1, limit / 2) : limit; }

}  // namespace

int64_t predicted_ttft_us(const StepCoefficients& model, int64_t tokens_ahead, int32_t prompt_tokens,
                          int32_t running, int32_t step_tokens) {
  const int64_t total = tokens_ahead + prompt_tokens;
  const int64_t budget = std::max(1, step_tokens);
  const int64_t full = total / budget;
  const int32_t rest = static_cast<int32_t>(total % budget);
  // Every step also carries the running decodes; their context is unknown here and left out.
  int64_t us = full * predict_step_us(model, static_cast<int32_t>(budget), running, 0);
  if (rest > 0) us += predict_step_us(model, rest, running, 0);
  return us;
}

std::optional<Refusal> admission_check(const SloConfig& slo, const QueueLoad& load, const AdmissionAsk& ask,
                                       const StepCoefficients& model, int32_t step_tokens) {
  if (!slo.admission) return std::nullopt;
  const bool best_effort = ask.priority >= slo.best_effort_priority;
  const std::string who = best_effort ? " (best-effort limit)" : "";
  const int64_t drain_us = predicted_ttft_us(model, load.queued_tokens, 0, load.running, step_tokens);
  if (slo.max_queue_len > 0) {
    const int64_t limit = limit_for(slo.max_queue_len, best_effort);
    if (load.queued_requests >= limit)
      return Refusal{"queue_full",
                     "the server is overloaded: " + std::to_string(load.queued_requests) +
                         " requests are queued, the limit is " + std::to_string(limit) + who + "; retry later",
                     retry_after(drain_us)};
  }
  if (slo.max_queued_tokens > 0) {
    const int64_t limit = limit_for(slo.max_queued_tokens, best_effort);
    if (load.queued_tokens + ask.prompt_tokens > limit)
      return Refusal{"queued_tokens_exceeded",
                     "the server is overloaded: " + std::to_string(load.queued_tokens) +
                         " prompt tokens are queued and this request adds " + std::to_string(ask.prompt_tokens) +
                         ", the limit is " + std::to_string(limit) + who + "; retry later",
                     retry_after(drain_us)};
  }
  if (ask.ttft_target_ms > 0 && model.samples > 0) {
    const int64_t predicted = predicted_ttft_us(model, load.queued_tokens, ask.prompt_tokens, load.running, step_tokens);
    const double factor = best_effort ? slo.ttft_factor / 2 : slo.ttft_factor;
    const double allowed_us = static_cast<double>(ask.ttft_target_ms) * 1000.0 * factor;
    if (static_cast<double>(predicted) > allowed_us)
      return Refusal{"ttft_unattainable",
                     "the server is overloaded: the predicted time to first token is " +
                         std::to_string(predicted / 1000) + " ms, over the " + std::to_string(ask.ttft_target_ms) +
                         " ms target times " + std::to_string(factor) + who + "; retry later",
                     retry_after(drain_us)};
  }
  return std::nullopt;
}

}  // namespace loom
