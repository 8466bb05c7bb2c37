// One generation request between submit and the end of its response. It submits the request,
// receives the engine's outputs on the connection's strand (the sink only posts), and turns them
// into one JSON response or an SSE stream of chunks; when the client goes away it aborts the
// request in the engine. With n > 1 the choices arrive interleaved, each output naming its
// index; the response ends when every choice has finished, or at the first that fails (the
// others are then aborted).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/server/http_exchange.hpp"
#include "core/server/openai_responses.hpp"

namespace loom {

struct StreamSettings {
  ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  int32_t prompt_tokens = 0;
  int32_t n = 1;          // choices
  bool logprobs = false;  // the request asked for logprobs
};

class GenerationStream : public std::enable_shared_from_this<GenerationStream> {
 public:
  GenerationStream(StreamSettings settings, EngineInterface& engine);

  // On the strand, inside the route handler. The exchange then owns this object. Throws what
  // EngineInterface::submit throws, before anything is sent, so the route can still reply 400.
  static void start(const std::shared_ptr<HttpExchange>& exchange, EngineInterface& engine,
                    StreamSettings settings, GenerateRequest request);

 private:
  struct Choice {
    std::string text;                   // non-streaming: everything so far
    std::vector<int32_t> tokens;        // non-streaming, with logprobs: every sampled token
    std::vector<RowLogprobs> logprobs;  // ... and its record
    int64_t text_offset = 0;            // completions logprobs: where the next token starts
    int32_t completion_tokens = 0;
    std::optional<FinishReason> finish;
  };

  void on_output(GenerationOutput&& out);
  void on_stream_output(HttpExchange& exchange, const GenerationOutput& out);
  void fail(HttpExchange& exchange, const GenerationOutput& out);
  // The logprobs object of some tokens of one choice (advancing its text offset), or null.
  Json logprobs_json(Choice& choice, std::span<const int32_t> tokens,
                     std::span<const RowLogprobs> records);
  void write_chunk(HttpExchange& exchange, const ChunkChoice& chunk);
  Usage usage() const;

  StreamSettings settings_;
  EngineInterface& engine_;
  std::weak_ptr<HttpExchange> exchange_;
  uint64_t request_id_ = 0;
  int32_t prompt_tokens_ = 0;
  std::vector<Choice> choices_;  // [n]
  int32_t num_finished_ = 0;
  bool finished_ = false;  // the response is complete (or failed)
};

}  // namespace loom
