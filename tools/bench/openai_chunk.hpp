// What one SSE event of an OpenAI-compatible stream says: the [DONE] sentinel, an error, a token
// delta (completions: choices[0].text; chat: choices[0].delta.content or reasoning_content) and/or
// the usage counts of the closing chunk (stream_options.include_usage).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "tools/bench/sse_parser.hpp"

namespace loom::bench {

struct ChunkInfo {
  bool done = false;                  // data: [DONE]
  std::optional<std::string> error;   // an error event or an {"error": ...} payload
  std::string text;                   // the delta text; non-empty means the chunk carries tokens
  std::optional<int64_t> prompt_tokens;      // usage.prompt_tokens
  std::optional<int64_t> completion_tokens;  // usage.completion_tokens
};

// Never throws: a payload that is not JSON becomes an error naming it.
ChunkInfo classify_chunk(const SseEvent& event);

}  // namespace loom::bench
