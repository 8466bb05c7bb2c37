#include "core/server/reasoning_parser.hpp"

#include <algorithm>

namespace loom {
namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

// The length of the longest suffix of `text` that is a proper prefix of `tag` (could become
// the tag once more text arrives).
size_t partial_tag_suffix(std::string_view text, std::string_view tag) {
  for (size_t n = std::min(text.size(), tag.size() - 1); n > 0; --n) {
    if (text.substr(text.size() - n) == tag.substr(0, n)) return n;
  }
  return 0;
}

}  // namespace

ReasoningParser::ReasoningParser(ReasoningTags tags, bool inside_at_start)
    : tags_(std::move(tags)), state_(inside_at_start ? State::kReasoning : State::kLeading) {}

ReasoningDelta ReasoningParser::push(std::string_view text) {
  pending_.append(text);
  return drain(/*final=*/false);
}

ReasoningDelta ReasoningParser::flush() { return drain(/*final=*/true); }

ReasoningDelta ReasoningParser::drain(bool final) {
  ReasoningDelta out;
  for (;;) {
    if (state_ == State::kLeading) {
      // Whitespace, then either the start tag (reasoning) or anything else (plain content).
      const size_t first = pending_.find_first_not_of(" \n\t\r");
      if (first == std::string::npos) {
        if (final) {
          out.content += pending_;
          pending_.clear();
        }
        return out;
      }
      const std::string_view rest = std::string_view(pending_).substr(first);
      if (rest.substr(0, tags_.start.size()) == tags_.start) {
        pending_.erase(0, first + tags_.start.size());
        state_ = State::kReasoning;
        continue;
      }
      if (!final && tags_.start.compare(0, rest.size(), rest) == 0) return out;  // maybe the tag
      state_ = State::kContent;
      continue;
    }
    if (state_ == State::kAfterReasoning) {
      // The answer conventionally starts after a blank line, which is not part of it.
      const size_t first = pending_.find_first_not_of(" \n\t\r");
      pending_.erase(0, std::min(first, pending_.size()));
      if (first == std::string::npos) return out;
      state_ = State::kContent;
      continue;
    }
    if (state_ == State::kContent) {
      out.content += pending_;
      pending_.clear();
      return out;
    }
    // Reasoning: up to the end tag; hold back a suffix that could begin it.
    const size_t end = pending_.find(tags_.end);
    if (end != std::string::npos) {
      out.reasoning += pending_.substr(0, end);
      pending_.erase(0, end + tags_.end.size());
      state_ = State::kAfterReasoning;
      continue;
    }
    const size_t keep = final ? 0 : partial_tag_suffix(pending_, tags_.end);
    out.reasoning += pending_.substr(0, pending_.size() - keep);
    pending_.erase(0, pending_.size() - keep);
    return out;
  }
}

bool template_uses_reasoning(std::string_view template_text, const ReasoningTags& tags) {
  return template_text.find(tags.start) != std::string_view::npos &&
         template_text.find(tags.end) != std::string_view::npos;
}

bool prompt_opens_reasoning(std::string_view prompt, const ReasoningTags& tags) {
  size_t end = prompt.size();
  while (end > 0 && is_space(prompt[end - 1])) --end;
  const std::string_view trimmed = prompt.substr(0, end);
  return trimmed.size() >= tags.start.size() && trimmed.substr(trimmed.size() - tags.start.size()) == tags.start;
}

}  // namespace loom
