// POST /v1/chat/completions body -> native request: the messages (text only) and the shared
// generation parameters.
#pragma once

#include <string_view>
#include <vector>

#include "core/server/chat_prompt.hpp"
#include "core/server/generation_params.hpp"

namespace loom {

struct ChatRequest {
  GenerationParams params;
  std::vector<ChatMessage> messages;  // at least one
};

// Roles: system (and its newer alias "developer"), user, assistant. Content: a string, or an
// array of {"type": "text", "text": ...} parts (joined); other part types are refused (400).
// An assistant message may have null content.
ChatRequest parse_chat_request(std::string_view body);

}  // namespace loom
