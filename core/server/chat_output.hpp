// A chat choice's generated text, split for the response: reasoning (reasoning_parser), then
// tool calls (tool_call_parser) out of what is left, then plain content. One per choice, fed the
// engine's text as it arrives; the stream layer turns each delta into OpenAI's JSON.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/server/reasoning_parser.hpp"
#include "core/server/tool_call_parser.hpp"

namespace loom {

// How a request's chat output is parsed (from the template, the config and the request).
struct ChatOutputSettings {
  std::optional<ReasoningTags> reasoning;  // set: the model reasons between these tags
  bool reasoning_open_at_start = false;    // the prompt ended inside the reasoning block
  ToolCallFormat tool_calls = ToolCallFormat::kNone;  // kNone: no tools asked for, or tool_choice none
  bool parallel_tool_calls = true;         // false: only the first call is returned
};

// A tool call of the choice, or (streaming) a piece of one: the first piece of a call carries
// its id and name, every piece the next part of its arguments.
struct ToolCallOut {
  int32_t index = 0;    // 0.. in order of the calls of the choice
  bool begins = true;   // the call's first piece
  std::string id;       // "call_" + 24 random hex digits (first piece)
  std::string name;     // (first piece)
  std::string arguments;  // JSON text
};

// The pieces of a choice's calls joined into whole calls, in order of index.
std::vector<ToolCallOut> join_tool_call_pieces(std::vector<ToolCallOut> pieces);

struct ChatDelta {
  std::string reasoning;
  std::string content;
  std::vector<ToolCallOut> calls;
};

class ChatOutput {
 public:
  explicit ChatOutput(const ChatOutputSettings& settings);

  ChatDelta push(const std::string& text);
  ChatDelta flush();
  int32_t num_calls() const { return num_calls_; }

 private:
  void take(ToolCallDelta&& d, ChatDelta& out);
  ChatDelta feed(ReasoningDelta&& r, bool final);

  std::unique_ptr<ReasoningParser> reasoning_;
  std::unique_ptr<ToolCallParser> tools_;
  bool parallel_ = true;
  int32_t num_calls_ = 0;
};

std::string make_tool_call_id();

}  // namespace loom
