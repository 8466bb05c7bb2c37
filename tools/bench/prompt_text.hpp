// Where prompt text comes from. With a tokenizer (a GGUF file's, via Loom's own loader) prompts
// are decoded from random token ids and measured by re-encoding, so lengths are exact in that
// tokenizer's tokens (as vLLM's random dataset does). Without one, a fixed vocabulary of common
// words is drawn and each word is counted as one token: lengths are then approximate.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <string>
#include <string_view>

namespace loom::bench {

class PromptText {
 public:
  virtual ~PromptText() = default;
  // Random text of n tokens (as close as re-encoding allows).
  virtual std::string random_text(int64_t n, std::mt19937_64& rng) const = 0;
  virtual int64_t count_tokens(std::string_view text) const = 0;
  // True when counts are real token counts, false for the word approximation.
  virtual bool exact() const = 0;
};

// Prompts of exact token counts with the tokenizer of a GGUF file, a Hugging Face model directory
// or a tokenizer.json. Throws loom::Error naming the file when it cannot be opened or has no
// supported tokenizer.
std::unique_ptr<PromptText> tokenizer_prompt_text(const std::string& path);
std::unique_ptr<PromptText> word_prompt_text();

}  // namespace loom::bench
