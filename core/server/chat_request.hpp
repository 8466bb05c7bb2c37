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
  // Tool calls are parsed out of the output when tools are given and tool_choice is auto (the
  // default with tools); none renders the tools but parses nothing.
  bool parse_tool_calls = false;
  bool parallel_tool_calls = true;
};

// Roles: system (and its newer alias "developer"), user, assistant, tool. Content: a string, or
// an array of {"type": "text", "text": ...} parts (joined); other part types are refused (400).
// An assistant message may have null content and `tool_calls` ([{id, type: "function",
// function: {name, arguments: JSON text}}]); a tool message needs `tool_call_id`. `tools` are
// [{type: "function", function: {name, description?, parameters?: object}}]; tool_choice is
// "auto" or "none" — "required", a named function and `strict: true` are refused until the
// constrained-decoding hook (chat_request.cpp, kConstrainedToolChoiceHook) is wired.
ChatRequest parse_chat_request(std::string_view body);

}  // namespace loom
