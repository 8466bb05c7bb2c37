// POST /v1/completions body -> native request. The prompt is kept as sent (text or token ids);
// the route tokenizes text and checks ids against the vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/server/generation_params.hpp"

namespace loom {

struct CompletionRequest {
  GenerationParams params;
  std::optional<std::string> prompt_text;  // set for a string prompt
  std::vector<int32_t> prompt_tokens;      // the ids of a token prompt (when prompt_text unset)
};

// `prompt` may be a string, an array of token ids, or a one-element array holding either; a
// batch of several prompts is refused (400) since one request makes one completion here.
CompletionRequest parse_completion_request(std::string_view body);

}  // namespace loom
