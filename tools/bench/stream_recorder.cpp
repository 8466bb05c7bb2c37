#include "tools/bench/stream_recorder.hpp"

#include "tools/bench/openai_chunk.hpp"

namespace loom::bench {

void StreamRecorder::on_bytes(std::string_view bytes, double t) {
  for (const SseEvent& event : parser_.feed(bytes)) {
    ChunkInfo chunk = classify_chunk(event);
    if (chunk.error) {
      if (record_.error.empty()) record_.error = "stream error: " + *chunk.error;
      continue;
    }
    if (chunk.done) {
      done_ = true;
      continue;
    }
    if (!chunk.text.empty()) {
      record_.token_times.push_back(t);
      record_.generated_text += chunk.text;
    }
    if (chunk.prompt_tokens) record_.usage_prompt_tokens = chunk.prompt_tokens;
    if (chunk.completion_tokens) record_.usage_completion_tokens = chunk.completion_tokens;
  }
}

void StreamRecorder::on_end(double t) {
  record_.end = t;
  if (record_.error.empty() && !done_) record_.error = "stream ended without [DONE]";
  // TTFT is undefined without a token: such a response cannot count as a measured success.
  if (record_.error.empty() && record_.token_times.empty()) record_.error = "stream carried no tokens";
  record_.success = record_.error.empty();
}

void StreamRecorder::on_failure(std::string error, double t) {
  record_.end = t;
  if (record_.error.empty()) record_.error = std::move(error);
  record_.success = false;
}

}  // namespace loom::bench
