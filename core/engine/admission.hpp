// Admission control: whether a new request is queued or refused at once (HTTP 429) because the
// queue is full or its predicted time to first token is hopeless. Decided on the submitting
// thread from a snapshot of the queue and the step-time model, so a refusal costs no engine step.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/engine/slo_snapshot.hpp"

namespace loom {

// What is queued now (requests submitted and not yet scheduled once).
struct QueueLoad {
  int32_t queued_requests = 0;
  int64_t queued_tokens = 0;  // their prompt tokens
  int32_t running = 0;        // requests in the running batch at the last step
};

struct AdmissionAsk {
  int32_t priority = 0;       // the API's (lower runs first)
  int32_t prompt_tokens = 0;
  int32_t ttft_target_ms = 0; // 0 = none: only the queue limits apply
};

struct Refusal {
  std::string reason;         // queue_full, queued_tokens_exceeded or ttft_unattainable
  std::string message;        // for the client, with the figures that decided it
  int32_t retry_after_s = 1;  // when the queue ahead should have drained, 1..60
};

// The predicted time to first token of a request whose prompt is computed after `tokens_ahead`
// queued prompt tokens, at most step_tokens prompt tokens a step beside `running` decodes.
int64_t predicted_ttft_us(const StepCoefficients& model, int64_t tokens_ahead, int32_t prompt_tokens,
                          int32_t running, int32_t step_tokens);

// Why `ask` is refused under `slo` (admission on), or nothing when it is queued. Best-effort
// priorities (>= slo.best_effort_priority) meet half of each queue limit, so they shed first.
// The TTFT rule applies only once the model has samples.
std::optional<Refusal> admission_check(const SloConfig& slo, const QueueLoad& load, const AdmissionAsk& ask,
                                       const StepCoefficients& model, int32_t step_tokens);

// What Engine::submit throws for a refused request; the server answers 429 with Retry-After.
class Overloaded : public Error {
 public:
  explicit Overloaded(Refusal refusal)
      : Error(refusal.message, LOOM_ERR_OUT_OF_MEMORY), refusal_(std::move(refusal)) {}
  const Refusal& refusal() const { return refusal_; }

 private:
  Refusal refusal_;
};

}  // namespace loom
