// Turns a model's output text into OpenAI tool calls, per model family:
//   hermes   Hermes / Qwen2.5 / Qwen3:  <tool_call>{"name": ..., "arguments": {...}}</tool_call> (repeated)
//   llama3   Llama 3.x JSON:            {"name": ..., "parameters": {...}}, optionally after
//                                       <|python_tag|>, several separated by ';'
//   mistral  Mistral:                   [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
// Incremental: text arrives in stream chunks split at any byte; a marker split across chunks is
// held back until it is whole or cannot be one, and a call is returned once, when its JSON is
// complete. Text outside calls is content. A block that does not parse as a call is given back
// as content, never dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

const char* tool_call_format_name(ToolCallFormat f);  // "none", "hermes", "llama3", "mistral"
// The configured name: "auto" (nullopt: choose from the template) or one of the above; throws
// loom::Error listing the valid names otherwise.
std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name);
// The family a chat template's text writes tool calls in; kNone when it names none.
ToolCallFormat tool_call_format_from_template(std::string_view template_text);

struct ParsedToolCall {
  std::string name;
  std::string arguments;  // compact JSON text of the arguments object
};

struct ToolCallDelta {
  std::string content;                 // text outside calls, in order
  std::vector<ParsedToolCall> calls;   // calls completed by this push, in order
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format);

  ToolCallDelta push(std::string_view text);
  ToolCallDelta flush();  // end of output: a pending call that parses is a call, else content

 private:
  ToolCallDelta drain(bool final);
  bool take_call_json(std::string_view json, ToolCallDelta& out);

  ToolCallFormat format_;
  std::string pending_;
  enum class State { kLeading, kText, kInCall, kDone } state_ = State::kLeading;
};

// Where the JSON object or array starting at text[0] ends (one past its closing bracket), or
// npos while it is incomplete. Strings and escapes are honoured.
size_t json_value_end(std::string_view text);

}  // namespace loom
