// POST /v1/completions body -> native request. Prompts are kept as sent (text or token ids);
// the route tokenizes text and checks ids against the vocabulary.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/server/generation_params.hpp"

namespace loom {

struct CompletionPrompt {
  std::optional<std::string> text;  // set for a string prompt
  std::vector<int32_t> tokens;      // the ids of a token prompt (when text is unset)
};

inline constexpr size_t kMaxPrompts = 128;  // prompts in one batched request

struct CompletionRequest {
  GenerationParams params;
  // At least one. A batch answers with one choice per prompt and choice: index = p * n + i.
  std::vector<CompletionPrompt> prompts;
  // The prompt is returned before the completion, and with logprobs its tokens are scored
  // (the first with null), as OpenAI's legacy completions do.
  bool echo = false;
  bool prompt_logprobs_field = false;  // vLLM's prompt_logprobs was sent (returned beside the text)
  Json body;  // the parsed body, kept for the semantic cache's look at the rest of its fields
};

// `prompt` may be a string, an array of token ids, or an array of strings or of token-id arrays
// (a batch of up to kMaxPrompts). Throws a 400 ApiError naming the field at fault, also for a
// field the route does not know (request_fields.hpp) and for `suffix`, which is refused.
CompletionRequest parse_completion_request(std::string_view body);

}  // namespace loom
