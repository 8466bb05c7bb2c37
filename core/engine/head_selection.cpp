#include "core/engine/head_selection.hpp"

#include "core/engine/request_state.hpp"

namespace loom {

int32_t head_top_k_of(const RequestState& req, int32_t limit, bool drafts) {
  const SamplingParams& s = req.sampling;
  if (limit <= 0 || s.logprobs || s.processing.active() || req.constraint || req.num_unforked > 0) return 0;
  if (s.temperature == 0.0f) return 1;
  if (drafts) return 0;
  return s.top_k > 0 && s.top_k <= limit ? s.top_k : 0;
}

}  // namespace loom
