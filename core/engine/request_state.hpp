// One request as the engine thread tracks it between arrival and finish.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <random>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/engine/stop_checker.hpp"
#include "core/model/incremental_detokenizer.hpp"
#include "loom/types.h"

namespace loom {

struct RequestState {
  RequestState(uint64_t id, GenerateRequest request, const Tokenizer& tokenizer, int64_t now_us,
               uint64_t seed);

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
  int32_t priority;
  int64_t arrival_time_us;
  OutputSink sink;
  std::mt19937_64 rng;
  IncrementalDetokenizer detokenizer;
  StopChecker stop_checker;
};

}  // namespace loom
