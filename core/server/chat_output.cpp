#include "core/server/chat_output.hpp"

#include <random>

namespace loom {

std::string make_tool_call_id() {
  thread_local std::mt19937_64 rng{std::random_device{}()};
  static constexpr char kHex[] = "0123456789abcdef";
  std::string id = "call_";
  uint64_t bits = rng();
  for (int i = 0; i < 24; ++i) {
    if (i == 16) bits = rng();
    id += kHex[bits & 0xF];
    bits >>= 4;
  }
  return id;
}

ChatOutput::ChatOutput(const ChatOutputSettings& s) : parallel_(s.parallel_tool_calls) {
  if (s.reasoning) reasoning_ = std::make_unique<ReasoningParser>(*s.reasoning, s.reasoning_open_at_start);
  if (s.tool_calls != ToolCallFormat::kNone) tools_ = std::make_unique<ToolCallParser>(s.tool_calls);
}

std::vector<ToolCallOut> join_tool_call_pieces(std::vector<ToolCallOut> pieces) {
  std::vector<ToolCallOut> calls;
  for (ToolCallOut& p : pieces) {
    if (p.begins) calls.push_back(std::move(p));
    else if (!calls.empty() && calls.back().index == p.index) calls.back().arguments += p.arguments;
  }
  return calls;
}

void ChatOutput::take(ToolCallDelta&& d, ChatDelta& out) {
  out.content += d.content;
  for (ToolCallFragment& f : d.fragments) {
    if (!parallel_ && f.call >= 1) continue;  // parallel_tool_calls: false keeps the first
    if (f.begins) ++num_calls_;
    out.calls.push_back(ToolCallOut{f.call, f.begins, f.begins ? make_tool_call_id() : "", std::move(f.name),
                                    std::move(f.arguments)});
  }
}

ChatDelta ChatOutput::feed(ReasoningDelta&& r, bool final) {
  ChatDelta out;
  out.reasoning = std::move(r.reasoning);
  if (!tools_) {
    out.content = std::move(r.content);
    return out;
  }
  take(tools_->push(r.content), out);
  if (final) take(tools_->flush(), out);
  return out;
}

ChatDelta ChatOutput::push(const std::string& text) {
  return feed(reasoning_ ? reasoning_->push(text) : ReasoningDelta{"", text}, false);
}

ChatDelta ChatOutput::flush() { return feed(reasoning_ ? reasoning_->flush() : ReasoningDelta{}, true); }

}  // namespace loom
