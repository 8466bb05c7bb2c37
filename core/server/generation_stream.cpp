#include "core/server/generation_stream.hpp"

#include "core/server/sse_event.hpp"

namespace loom {
namespace {

bool failed(FinishReason reason) {
  return reason == FinishReason::kAbort || reason == FinishReason::kError;
}

ApiError failure(const GenerationOutput& out) {
  const std::string message = *out.finish == FinishReason::kAbort
                                  ? "the request was aborted by the server"
                                  : "generation failed: " + out.error;
  return ApiError(500, message, std::nullopt, "server_error");
}

}  // namespace

GenerationStream::GenerationStream(StreamSettings settings, EngineInterface& engine)
    : settings_(std::move(settings)), engine_(engine) {
  usage_.prompt_tokens = settings_.prompt_tokens;
}

void GenerationStream::start(const std::shared_ptr<HttpExchange>& exchange, EngineInterface& engine,
                             StreamSettings settings, GenerateRequest request) {
  auto self = std::make_shared<GenerationStream>(std::move(settings), engine);
  self->exchange_ = exchange;
  const std::weak_ptr<GenerationStream> weak = self;
  // Runs on the engine thread: no work here beyond queueing onto the connection's strand.
  request.sink = [poster = exchange->poster(), weak](GenerationOutput&& out) {
    poster->post([weak, out = std::move(out)]() mutable {
      if (auto stream = weak.lock()) stream->on_output(std::move(out));
    });
  };
  self->request_id_ = engine.submit(std::move(request));
  exchange->hold(self);
  exchange->on_client_gone([weak, &engine] {
    if (auto stream = weak.lock()) engine.abort(stream->request_id_);
  });
  if (self->settings_.stream) {
    exchange->begin_stream(200, kSseContentType);
    // Chat streams open with the assistant role, as OpenAI's do, before any token.
    if (self->settings_.meta.kind == ApiKind::kChat) {
      self->write_chunk(*exchange, "", std::nullopt, /*role_delta=*/true);
    }
  }
}

void GenerationStream::on_output(GenerationOutput&& out) {
  auto exchange = exchange_.lock();
  if (!exchange || exchange->client_gone() || finished_) return;
  finished_ = out.finish.has_value();
  usage_.completion_tokens = out.completion_tokens;
  if (out.prompt_tokens > 0) usage_.prompt_tokens = out.prompt_tokens;
  if (settings_.stream) return on_stream_output(*exchange, out);

  text_ += out.text;
  if (!out.finish) return;
  if (failed(*out.finish)) {
    const ApiError error = failure(out);
    return exchange->reply(HttpReply{error.status, "application/json", error_json(error), {}});
  }
  exchange->reply(HttpReply{200,
                            "application/json",
                            completion_response_json(settings_.meta, text_, *out.finish, usage_),
                            {}});
}

void GenerationStream::on_stream_output(HttpExchange& exchange, const GenerationOutput& out) {
  const bool is_failure = out.finish && failed(*out.finish);
  // Empty deltas are not sent; the last chunk carries finish_reason even when empty.
  if (!out.text.empty() || (out.finish && !is_failure)) {
    write_chunk(exchange, out.text, is_failure ? std::nullopt : out.finish, false);
  }
  if (!out.finish) return;
  if (is_failure) {
    exchange.write(sse_event(error_json(failure(out))));
  } else if (settings_.include_usage) {
    exchange.write(sse_event(usage_chunk_json(settings_.meta, usage_)));
  }
  exchange.write(std::string(kSseDone));
  exchange.end_stream();
}

void GenerationStream::write_chunk(HttpExchange& exchange, const std::string& text,
                                   std::optional<FinishReason> finish, bool role_delta) {
  exchange.write(sse_event(
      stream_chunk_json(settings_.meta, text, finish, role_delta, settings_.include_usage)));
}

}  // namespace loom
