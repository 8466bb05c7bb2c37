// The JSON body of one streaming request for turn `turn` of a conversation, for
// /v1/completions (one prompt string) or /v1/chat/completions (messages). Earlier turns go in
// with the answers the server actually gave (`answers`, one per earlier turn).
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "tools/bench/prompt_text.hpp"
#include "tools/bench/workload.hpp"

namespace loom::bench {

struct BodyOptions {
  std::string model;
  bool chat = false;       // /v1/chat/completions
  bool ignore_eos = true;  // vLLM/llama.cpp extension: generate exactly max_tokens
  bool class_fields = true;  // send a class's priority and slo (a server that refuses them: off)
};

std::string request_body(const BodyOptions& options, const Conversation& conversation, size_t turn,
                         std::span<const std::string> answers);

// The prompt's length as the client counts it: the completion prompt, or for chat the sum over
// the message contents (the server's chat template adds a few more; its usage is preferred).
int64_t client_prompt_tokens(const BodyOptions& options, const Conversation& conversation,
                             size_t turn, std::span<const std::string> answers,
                             const PromptText& text);

// The /v1/completions prompt: system, then each earlier turn and its answer, then this turn,
// one per line.
std::string completion_prompt(const Conversation& conversation, size_t turn,
                              std::span<const std::string> answers);

}  // namespace loom::bench
