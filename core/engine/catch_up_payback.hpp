// Whether speculating for a request repays what it first costs to catch its speculator up: a
// draft model must compute every token the request gained since it last drafted (its whole
// context at the first proposal), about 0.9 ms a token for SmolLM2-135M Q4_1 on 2 cores, so a
// request 400 tokens behind costs 0.4 s before its first draft.
//
// In a step of `batch` decodes that takes t0_us without drafts, drafting for the request makes
// the step take t_us and yield batch + gain tokens (gain: its expected accepted drafts). The
// batch's rate goes from batch / t0 to (batch + gain) / t, for the horizon / (1 + gain) steps
// the request has left (horizon: the tokens it may still generate). The tokens gained in those
// steps, at the rate without drafts, are the time speculating saves; it must exceed invest_us.
// With invest_us = 0 this is "drafting raises the step's rate".
#pragma once

#include <cstdint>

namespace loom {

inline bool repays_catch_up(int32_t batch, double t0_us, double t_us, double gain, double horizon, double invest_us) {
  if (batch <= 0 || t0_us <= 0 || t_us <= 0) return false;
  const double speedup = ((batch + gain) / t_us) / (batch / t0_us);
  return speedup > 1.0 && (speedup - 1.0) * (horizon / (1.0 + gain)) * t_us > invest_us;
}

}  // namespace loom
