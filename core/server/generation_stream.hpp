// One generation request between submit and the end of its response. It submits the request,
// receives the engine's outputs on the connection's strand (the sink only posts), and turns them
// into one JSON response or an SSE stream of chunks; when the client goes away it aborts the
// request in the engine.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "core/engine/engine_api.hpp"
#include "core/server/http_exchange.hpp"
#include "core/server/openai_responses.hpp"

namespace loom {

struct StreamSettings {
  ResponseMeta meta;
  bool stream = false;
  bool include_usage = false;
  int32_t prompt_tokens = 0;
};

class GenerationStream : public std::enable_shared_from_this<GenerationStream> {
 public:
  GenerationStream(StreamSettings settings, EngineInterface& engine);

  // On the strand, inside the route handler. The exchange then owns this object. Throws what
  // EngineInterface::submit throws, before anything is sent, so the route can still reply 400.
  static void start(const std::shared_ptr<HttpExchange>& exchange, EngineInterface& engine,
                    StreamSettings settings, GenerateRequest request);

 private:
  void on_output(GenerationOutput&& out);
  void on_stream_output(HttpExchange& exchange, const GenerationOutput& out);
  void write_chunk(HttpExchange& exchange, const std::string& text,
                   std::optional<FinishReason> finish, bool role_delta);

  StreamSettings settings_;
  EngineInterface& engine_;
  std::weak_ptr<HttpExchange> exchange_;
  uint64_t request_id_ = 0;
  Usage usage_;
  std::string text_;  // non-streaming: everything so far
  bool finished_ = false;
};

}  // namespace loom
