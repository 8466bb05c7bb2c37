// The request fields /v1/completions and /v1/chat/completions share: the model name, the
// sampling parameters and the streaming switches, parsed and range-checked into native types.
#pragma once

#include <optional>
#include <string>

#include "core/engine/engine_api.hpp"
#include "core/server/json_fields.hpp"
#include "core/server/slo_request.hpp"

namespace loom {

inline constexpr size_t kMaxStopStrings = 16;

struct GenerationParams {
  std::optional<std::string> model;   // as sent; checked against the served name by the route
  SamplingParams sampling;            // max_tokens left at its default when unset
  std::optional<int32_t> max_tokens;  // unset: the route picks the default
  bool stream = false;
  bool include_usage = false;  // stream_options.include_usage
  int32_t n = 1;               // choices
  // Candidates generated per prompt, of which the n with the highest cumulative logprob are
  // returned (vLLM's best_of); >= n. Not with stream.
  int32_t best_of = 1;
  uint64_t cache_salt = 0;     // hash of `cache_salt`; 0 = none
  std::optional<std::string> user;  // OpenAI's end-user id: recorded in the request log line
  SloRequestFields slo;        // priority, slo targets, tenant (core/server/slo_request.hpp)
};

inline constexpr size_t kMaxLogitBias = 300;    // OpenAI's limit on logit_bias entries
inline constexpr size_t kMaxStopTokenIds = 64;

// A nonzero 64-bit hash (FNV-1a) of a cache_salt string.
uint64_t hash_cache_salt(const std::string& salt);

// Reads model, max_tokens (chat: max_completion_tokens wins over it), temperature [0, 2],
// top_p (0, 1], top_k (-1 or 0 = off, else >= 1), min_p [0, 1], seed (any 64-bit integer),
// stop (a string or up to kMaxStopStrings non-empty strings), n [1, kMaxChoices], ignore_eos,
// stream, stream_options, cache_salt (a non-empty string), and logprobs: completions take
// `logprobs` as an integer [0, 20]; chat takes `logprobs` (bool) and `top_logprobs` [0, 20],
// which needs logprobs = true; presence_penalty and frequency_penalty [-2, 2],
// repetition_penalty (0, 2], logit_bias ({"token id": bias in [-100, 100]}, up to kMaxLogitBias),
// min_tokens >= 0, stop_token_ids (up to kMaxStopTokenIds ids >= 0), best_of [n, kMaxChoices],
// prompt_logprobs [0, 20] (vLLM) and user (a string). Throws a 400 ApiError naming the field.
// Which fields a route accepts at all is request_fields.hpp's business.
GenerationParams parse_generation_params(const Json& body, bool chat);

}  // namespace loom
