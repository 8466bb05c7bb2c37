#include "core/server/semantic_cache_engines.hpp"

#include <string>

namespace loom {

uint64_t CachedAnswerEngine::submit(GenerateRequest request) {
  // The sink posts onto the connection's strand, so calling it here, inside the route handler,
  // delivers after GenerationStream::start has set up the response, in order.
  const std::string& text = answer_.text;
  const auto prompt_tokens = static_cast<int32_t>(request.prompt.size());
  size_t begin = 0;
  do {
    // One piece per word with the spaces before it, the last one carrying the finish.
    size_t end = text.find_first_not_of(' ', begin);
    end = end == std::string::npos ? text.size() : text.find(' ', end);
    if (end == std::string::npos) end = text.size();
    GenerationOutput out;
    out.text = text.substr(begin, end - begin);
    out.prompt_tokens = prompt_tokens;
    if (end == text.size()) {
      out.finish = answer_.finished_by_length ? FinishReason::kLength : FinishReason::kStop;
      out.completion_tokens = answer_.completion_tokens;
    }
    request.sink(std::move(out));
    begin = end;
  } while (begin < text.size());
  return 0;
}

uint64_t StoringEngine::submit(GenerateRequest request) {
  struct Collected {
    std::string text;
  };
  auto collected = std::make_shared<Collected>();
  // Runs on the engine thread: append, and on a normal finish hand the answer to the cache.
  request.sink = [sink = std::move(request.sink), collected, cache = &cache_, query = query_](GenerationOutput&& out) {
    collected->text += out.text;
    if (out.finish && (*out.finish == FinishReason::kStop || *out.finish == FinishReason::kLength))
      cache->store(*query, SemanticAnswer{collected->text, out.completion_tokens,
                                          *out.finish == FinishReason::kLength, 1.0f});
    sink(std::move(out));
  };
  return engine_.submit(std::move(request));
}

}  // namespace loom
