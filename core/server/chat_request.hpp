// POST /v1/chat/completions body -> native request: the messages (text only) and the shared
// generation parameters.
#pragma once

#include <string_view>
#include <vector>

#include "core/server/chat_prompt.hpp"
#include "core/server/generation_params.hpp"
#include "core/server/tool_choice.hpp"

namespace loom {

struct ChatRequest {
  GenerationParams params;
  std::vector<ChatMessage> messages;  // at least one
  ToolChoice tools;  // tools, tool_choice and parallel_tool_calls (tool_choice.hpp)
  Json body;         // the parsed body, kept for the semantic cache's look at the rest of its fields
};

// Roles: system (and its newer alias "developer"), user, assistant, tool. Content: a string, or
// an array of {"type": "text", "text": ...} parts (joined); other part types are refused (400).
// An assistant message may have null content and `tool_calls` ([{id, type: "function",
// function: {name, arguments: JSON text}}]); a tool message needs `tool_call_id`. `tools` are
// [{type: "function", function: {name, description?, parameters?: object, strict?}}], read with
// tool_choice as tool_choice.hpp says.
ChatRequest parse_chat_request(std::string_view body);

}  // namespace loom
