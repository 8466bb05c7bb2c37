// One request as the engine thread tracks it between arrival and finish.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/engine/constraint_state.hpp"
#include "core/engine/engine_api.hpp"
#include "core/engine/stop_checker.hpp"
#include "core/tokenizer/incremental_detokenizer.hpp"
#include "loom/types.h"

namespace loom {

struct RequestState {
  // Choice `index` of the request submitted as `group`; its generator is seeded with `seed`.
  RequestState(uint64_t id, GenerateRequest request, const Tokenizer& tokenizer, int64_t now_us,
               uint64_t seed, uint64_t group, int32_t index);

  // The scheduler's view of this request (points into token_ids; valid until tokens change).
  loom_request_view view() const;
  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_generated() const { return num_tokens() - num_prompt_tokens; }

  uint64_t id;
  std::vector<int32_t> token_ids;  // [prompt..., generated...]
  int32_t num_prompt_tokens;
  int32_t num_computed_tokens = 0;  // tokens whose K/V are in the cache
  int32_t max_total_tokens;         // prompt + max_tokens
  SamplingParams sampling;
  int32_t priority;        // the API's: lower runs first (the view carries -priority)
  SloTargets slo;
  uint64_t tenant_id;
  bool queued = true;      // counted in the engine's admission load until first scheduled
  int64_t arrival_time_us;
  OutputSink sink;
  uint64_t group;        // the id submit() returned: abort() cancels every choice under it
  int32_t index;         // the choice, 0..n-1
  uint64_t seed;         // choice i of a request seeded s uses s + i
  uint64_t cache_salt;
  // Choices index+1 .. index+num_unforked are still to be forked from this one when its prompt
  // is computed (at its first sample); they share its prompt's KV blocks.
  int32_t num_unforked = 0;
  std::mt19937_64 rng;
  IncrementalDetokenizer detokenizer;
  StopChecker stop_checker;
  std::unique_ptr<ConstraintState> constraint;  // set when sampling.grammar is
  // With sampling.prompt_logprobs: [recorded so far] of the P - 1 prompt scores; a recompute
  // after preemption does not record a position twice. Sent with the first output.
  std::vector<RowLogprobs> prompt_logprobs;
  bool prompt_logprobs_sent = false;
  // While one step verifies drafts, the outputs of the tokens it accepts are merged here and
  // reach the sink as one (a streamed chunk carries every token of the step).
  bool coalesce_outputs = false;
  std::optional<GenerationOutput> pending_output;
};

}  // namespace loom
