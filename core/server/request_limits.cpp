#include "core/server/request_limits.hpp"

#include <algorithm>

#include "core/server/api_error.hpp"

namespace loom {
namespace {

ApiError over(const std::string& field, const std::string& what, int64_t got, int64_t limit, const char* key) {
  return bad_field(field, "'" + field + "' " + what + " " + std::to_string(got) + "; this server allows at most " +
                              std::to_string(limit) + " (server." + key + ")");
}

}  // namespace

void check_request_limits(const ServerLimits& limits, const GenerationParams& params, bool chat) {
  if (params.n > limits.max_n) throw over("n", "is", params.n, limits.max_n, "max_n");
  if (params.best_of > limits.max_best_of) throw over("best_of", "is", params.best_of, limits.max_best_of, "max_best_of");
  const auto& stop = params.sampling.stop;
  if (static_cast<int64_t>(stop.size()) > limits.max_stop_sequences) {
    throw over("stop", "has", static_cast<int64_t>(stop.size()), limits.max_stop_sequences, "max_stop_sequences");
  }
  for (size_t i = 0; i < stop.size(); ++i) {
    if (static_cast<int64_t>(stop[i].size()) > limits.max_stop_length) {
      throw over("stop", "has a string of", static_cast<int64_t>(stop[i].size()), limits.max_stop_length,
                 "max_stop_length");
    }
  }
  const char* logprobs_field = chat ? "top_logprobs" : "logprobs";
  if (params.sampling.logprobs && *params.sampling.logprobs > limits.max_logprobs) {
    throw over(logprobs_field, "is", *params.sampling.logprobs, limits.max_logprobs, "max_logprobs");
  }
  if (params.sampling.prompt_logprobs && *params.sampling.prompt_logprobs > limits.max_logprobs) {
    throw over("prompt_logprobs", "is", *params.sampling.prompt_logprobs, limits.max_logprobs, "max_logprobs");
  }
}

TokenLimit check_prompt_limits(const ServerLimits& limits, int32_t max_model_len, size_t n_prompt,
                               const std::string& prompt_param) {
  if (limits.max_input_tokens > 0 && n_prompt > static_cast<size_t>(limits.max_input_tokens)) {
    throw bad_field(prompt_param, "the prompt ('" + prompt_param + "') has " + std::to_string(n_prompt) +
                                      " tokens; this server allows at most " + std::to_string(limits.max_input_tokens) +
                                      " input tokens (server.max_input_tokens)");
  }
  if (limits.max_total_tokens <= 0 || (max_model_len > 0 && max_model_len <= limits.max_total_tokens)) {
    return TokenLimit{max_model_len, "This model's maximum context length (max_model_len)"};
  }
  return TokenLimit{limits.max_total_tokens, "This server's limit on prompt + max_tokens (server.max_total_tokens)"};
}

}  // namespace loom
