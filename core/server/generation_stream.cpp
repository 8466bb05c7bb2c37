#include "core/server/generation_stream.hpp"

#include "core/server/logprobs_json.hpp"
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
    : settings_(std::move(settings)),
      engine_(engine),
      prompt_tokens_(settings_.prompt_tokens),
      choices_(static_cast<size_t>(std::max(1, settings_.n))) {}

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
    // Chat streams open each choice with the assistant role, as OpenAI's do, before any token.
    if (self->settings_.meta.kind == ApiKind::kChat) {
      for (int32_t i = 0; i < static_cast<int32_t>(self->choices_.size()); ++i) {
        ChunkChoice opening;
        opening.index = i;
        opening.role_delta = true;
        self->write_chunk(*exchange, opening);
      }
    }
  }
}

Usage GenerationStream::usage() const {
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  for (const Choice& c : choices_) u.completion_tokens += c.completion_tokens;
  return u;
}

Json GenerationStream::logprobs_json(Choice& choice, std::span<const int32_t> tokens,
                                     std::span<const RowLogprobs> records) {
  if (!settings_.logprobs) return Json(nullptr);
  const Tokenizer& tokenizer = engine_.tokenizer();
  return settings_.meta.kind == ApiKind::kChat
             ? chat_logprobs_json(tokenizer, tokens, records)
             : completion_logprobs_json(tokenizer, tokens, records, choice.text_offset);
}

void GenerationStream::on_output(GenerationOutput&& out) {
  auto exchange = exchange_.lock();
  if (!exchange || exchange->client_gone() || finished_) return;
  if (out.index < 0 || out.index >= static_cast<int32_t>(choices_.size())) return;
  Choice& choice = choices_[static_cast<size_t>(out.index)];
  if (choice.finish) return;
  choice.completion_tokens = out.completion_tokens;
  if (out.prompt_tokens > 0) prompt_tokens_ = out.prompt_tokens;
  if (out.finish && failed(*out.finish)) return fail(*exchange, out);
  if (out.finish) {
    choice.finish = out.finish;
    ++num_finished_;
  }
  if (settings_.stream) return on_stream_output(*exchange, out);

  choice.text += out.text;
  if (settings_.logprobs) {
    choice.tokens.insert(choice.tokens.end(), out.token_ids.begin(), out.token_ids.end());
    choice.logprobs.insert(choice.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
  }
  if (num_finished_ < static_cast<int32_t>(choices_.size())) return;
  finished_ = true;
  std::vector<ChoiceResult> results;
  for (size_t i = 0; i < choices_.size(); ++i) {
    Choice& c = choices_[i];
    results.push_back(ChoiceResult{static_cast<int32_t>(i), std::move(c.text), *c.finish,
                                   logprobs_json(c, c.tokens, c.logprobs)});
  }
  exchange->reply(
      HttpReply{200, "application/json", completion_response_json(settings_.meta, results, usage()), {}});
}

void GenerationStream::fail(HttpExchange& exchange, const GenerationOutput& out) {
  finished_ = true;
  // One choice failing fails the response: the others need not run on.
  if (choices_.size() > 1) engine_.abort(request_id_);
  const ApiError error = failure(out);
  if (!settings_.stream) {
    return exchange.reply(HttpReply{error.status, "application/json", error_json(error), {}});
  }
  exchange.write(sse_event(error_json(error)));
  exchange.write(std::string(kSseDone));
  exchange.end_stream();
}

void GenerationStream::on_stream_output(HttpExchange& exchange, const GenerationOutput& out) {
  Choice& choice = choices_[static_cast<size_t>(out.index)];
  ChunkChoice chunk;
  chunk.index = out.index;
  chunk.finish = out.finish;
  const bool has_logprobs = settings_.logprobs && !out.logprobs.empty();
  // Empty deltas are not sent (unless they carry logprobs); the last chunk of a choice carries
  // its finish_reason even when empty.
  if (!out.text.empty() || out.finish || has_logprobs) {
    chunk.text = out.text;
    if (has_logprobs) chunk.logprobs = logprobs_json(choice, out.token_ids, out.logprobs);
    write_chunk(exchange, chunk);
  }
  if (num_finished_ < static_cast<int32_t>(choices_.size())) return;
  finished_ = true;
  if (settings_.include_usage) exchange.write(sse_event(usage_chunk_json(settings_.meta, usage())));
  exchange.write(std::string(kSseDone));
  exchange.end_stream();
}

void GenerationStream::write_chunk(HttpExchange& exchange, const ChunkChoice& chunk) {
  exchange.write(sse_event(stream_chunk_json(settings_.meta, chunk, settings_.include_usage)));
}

}  // namespace loom
