// The request limits of [server] (TGI's, with vLLM's field names): checked on a parsed request so
// that a request over one is a 400 naming its field, before any work is queued for it.
#pragma once

#include <cstdint>
#include <string>

#include "core/config/server_limits.hpp"
#include "core/server/api_context.hpp"
#include "core/server/generation_params.hpp"

namespace loom {

// n, best_of, stop (count and bytes of each), logprobs / top_logprobs / prompt_logprobs.
void check_request_limits(const ServerLimits& limits, const GenerationParams& params, bool chat);

// The prompt length against max_input_tokens (400 naming prompt_param), and the total a request
// may reach: min(max_model_len, max_total_tokens), for resolve_max_tokens, named for the limit
// that binds. 0 limits are derived from max_model_len; max_model_len <= 0 (unknown) leaves only
// the configured ones.
TokenLimit check_prompt_limits(const ServerLimits& limits, int32_t max_model_len, size_t n_prompt,
                               const std::string& prompt_param);

}  // namespace loom
