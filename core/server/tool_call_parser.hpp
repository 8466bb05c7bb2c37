// Turns a model's output text into OpenAI tool calls, per model family:
//   hermes   Hermes / Qwen2.5 / Qwen3:  <tool_call>{"name": ..., "arguments": {...}}</tool_call> (repeated)
//   llama3   Llama 3.x JSON:            {"name": ..., "parameters": {...}}, optionally after
//                                       <|python_tag|>, several separated by ';'
//   mistral  Mistral:                   [TOOL_CALLS][{"name": ..., "arguments": {...}}, ...]
// Incremental: text arrives in stream chunks split at any byte; a marker split across chunks is
// held back until it is whole or cannot be one. A call is streamed as it is generated: once its
// text names the function before an arguments object, its first fragment carries the name, and
// each later push the arguments' new text (compacted: whitespace outside strings dropped), so
// the fragments of a call concatenate to the same arguments however the text was split. From
// then on the block is a call even if the output ends inside it (OpenAI returns such a call with
// finish_reason "length"). A call whose arguments come first or are a JSON string is returned
// whole when its JSON is complete. Text outside calls is content; a block that does not parse
// as a call is given back as content, never dropped.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/server/tool_call_json.hpp"

namespace loom {

enum class ToolCallFormat { kNone, kHermes, kLlama3Json, kMistral };

const char* tool_call_format_name(ToolCallFormat f);  // "none", "hermes", "llama3", "mistral"
// The configured name: "auto" (nullopt: choose from the template) or one of the above; throws
// loom::Error listing the valid names otherwise.
std::optional<ToolCallFormat> parse_tool_call_format(std::string_view name);
// The family a chat template's text writes tool calls in; kNone when it names none.
ToolCallFormat tool_call_format_from_template(std::string_view template_text);

// A piece of one call, in order.
struct ToolCallFragment {
  int32_t call = 0;       // 0.. the call's place among the output's calls
  bool begins = false;    // the call's first fragment: `name` is set
  std::string name;
  std::string arguments;  // the next piece of the arguments' JSON text (compact)
};

struct ToolCallDelta {
  std::string content;                       // text outside calls, in order
  std::vector<ToolCallFragment> fragments;   // call pieces this push gave, in order
};

class ToolCallParser {
 public:
  explicit ToolCallParser(ToolCallFormat format);

  ToolCallDelta push(std::string_view text);
  ToolCallDelta flush();  // end of output: a pending call that parses is a call, else content

 private:
  ToolCallDelta drain(bool final);
  bool drain_hermes(bool final, ToolCallDelta& out);
  bool drain_json_call(bool final, ToolCallDelta& out);
  // The call object's text so far (from its '{'), of which the first `usable` bytes may be read.
  void advance_call(std::string_view object, size_t usable, ToolCallDelta& out);
  // The call object is over: a streamed call sends the rest of its arguments; any other is
  // parsed whole. False when it is not a call.
  bool end_call(std::string_view object, ToolCallDelta& out);

  ToolCallFormat format_;
  std::string pending_;
  enum class State { kLeading, kText, kInCall, kInArray, kDone } state_ = State::kLeading;
  int32_t next_call_ = 0;       // the number of the next call to begin
  bool streaming_ = false;      // the open call has sent its name
  size_t arguments_begin_ = 0;  // where its arguments object starts in the object's text
  size_t arguments_sent_ = 0;   // compact argument bytes sent
  std::string give_back_;       // Mistral: the marker and '[' to return as text if no call follows
};

}  // namespace loom
