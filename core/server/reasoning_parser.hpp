// Splits a reasoning model's output into its reasoning and its answer: the text between a start
// and an end tag (Qwen3 / DeepSeek-R1's <think>...</think>) goes to `reasoning_content` (and
// vLLM's newer `reasoning`), the rest to `content`. Incremental: text arrives in stream chunks
// split at any byte, and a tag split across chunks is held back until it is whole or cannot be
// a tag; the tags themselves are never returned.
//
// Reasoning starts only at the start of the output (leading whitespace allowed), or at once
// when the prompt already opened it (DeepSeek-R1's template ends the prompt with "<think>\n").
// After the end tag everything is content; an unfinished reasoning at the end stays reasoning.
#pragma once

#include <string>
#include <string_view>

namespace loom {

struct ReasoningTags {
  std::string start = "<think>";
  std::string end = "</think>";
};

struct ReasoningDelta {
  std::string reasoning;
  std::string content;
};

class ReasoningParser {
 public:
  // inside_at_start: the prompt ended inside a reasoning block (it ends with the start tag).
  ReasoningParser(ReasoningTags tags, bool inside_at_start);

  ReasoningDelta push(std::string_view text);
  ReasoningDelta flush();  // at the end of the output: whatever was held back

 private:
  enum class State { kLeading, kReasoning, kAfterReasoning, kContent };
  ReasoningDelta drain(bool final);

  ReasoningTags tags_;
  State state_;
  std::string pending_;  // held back: may still become a tag
};

// The tags a chat template's text mentions (its reasoning format), when it mentions both of
// the known pair; `configured` ("auto", "none" or "think") decides: auto = from the template.
bool template_uses_reasoning(std::string_view template_text, const ReasoningTags& tags);

// Whether a rendered prompt ends inside a reasoning block (the start tag last, after trailing
// whitespace, with no end tag after it).
bool prompt_opens_reasoning(std::string_view prompt, const ReasoningTags& tags);

}  // namespace loom
