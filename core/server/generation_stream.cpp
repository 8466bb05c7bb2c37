#include "core/server/generation_stream.hpp"

#include <algorithm>
#include <numeric>

#include "core/common/logging.hpp"
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

GenerationStream::GenerationStream(StreamSettings settings, EngineInterface& engine, size_t num_prompts)
    : settings_(std::move(settings)),
      engine_(engine),
      prompt_tokens_(settings_.prompt_tokens),
      choices_(num_prompts * static_cast<size_t>(std::max(1, settings_.best_of))) {}

void GenerationStream::start(const std::shared_ptr<HttpExchange>& exchange, EngineInterface& engine,
                             StreamSettings settings, std::vector<GenerateRequest> requests) {
  auto self = std::make_shared<GenerationStream>(std::move(settings), engine, requests.size());
  self->exchange_ = exchange;
  const std::weak_ptr<GenerationStream> weak = self;
  try {
    for (size_t p = 0; p < requests.size(); ++p) {
      // Runs on the engine thread: no work here beyond queueing onto the connection's strand.
      requests[p].sink = [poster = exchange->poster(), weak, p](GenerationOutput&& out) {
        poster->post([weak, p, out = std::move(out)]() mutable {
          if (auto stream = weak.lock()) stream->on_output(p, std::move(out));
        });
      };
      self->request_ids_.push_back(engine.submit(std::move(requests[p])));
    }
  } catch (...) {
    self->abort_all();  // the prompts already queued must not run for nobody
    throw;
  }
  exchange->hold(self);
  exchange->on_client_gone([weak] {
    if (auto stream = weak.lock()) stream->abort_all();
  });
  exchange->on_server_stop([weak] {
    if (auto stream = weak.lock()) {
      stream->cut(ApiError(503, "the server is shutting down and its drain time ran out before this request finished",
                           std::nullopt, "server_error", "server_shutting_down"));
    }
  });
  if (self->settings_.timeout.count() > 0) {
    const auto seconds = std::chrono::duration_cast<std::chrono::seconds>(self->settings_.timeout).count();
    self->timeout_ = exchange->poster()->post_after(self->settings_.timeout, [weak, seconds] {
      if (auto stream = weak.lock()) {
        stream->cut(ApiError(504, "the request did not finish within the server's request timeout of " +
                                      std::to_string(seconds) + " s (server.request_timeout)",
                             std::nullopt, "server_error", "request_timeout"));
      }
    });
  }
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

void GenerationStream::abort_all() {
  for (uint64_t id : request_ids_) engine_.abort(id);
}

Usage GenerationStream::usage() const {
  Usage u;
  u.prompt_tokens = prompt_tokens_;
  if (settings_.meta.semantic_similarity) u.cached_tokens = prompt_tokens_;  // the whole answer was stored
  for (const Choice& c : choices_) u.completion_tokens += c.completion_tokens;
  return u;
}

Json GenerationStream::logprobs_json(Choice& choice, size_t prompt, bool with_prompt, std::span<const int32_t> tokens,
                                     std::span<const RowLogprobs> records) {
  if (!settings_.logprobs) return Json(nullptr);
  const Tokenizer& tokenizer = engine_.tokenizer();
  if (settings_.meta.kind == ApiKind::kChat) return chat_logprobs_json(tokenizer, tokens, records);
  if (!with_prompt || !settings_.echo) {
    return completion_logprobs_json(tokenizer, tokens, records, choice.text_offset);
  }
  Json out = prompt_completion_logprobs_json(tokenizer, settings_.prompts[prompt].tokens, choice.prompt_logprobs,
                                             choice.text_offset);
  append_completion_logprobs(out, completion_logprobs_json(tokenizer, tokens, records, choice.text_offset));
  return out;
}

Json GenerationStream::prompt_logprobs_json(const Choice& choice, size_t prompt) const {
  return vllm_prompt_logprobs_json(engine_.tokenizer(), settings_.prompts[prompt].tokens, choice.prompt_logprobs);
}

void GenerationStream::on_output(size_t prompt, GenerationOutput&& out) {
  auto exchange = exchange_.lock();
  if (!exchange || exchange->client_gone() || finished_) return;
  const int32_t best_of = std::max(1, settings_.best_of);
  if (out.index < 0 || out.index >= best_of) return;
  const size_t slot = prompt * static_cast<size_t>(best_of) + static_cast<size_t>(out.index);
  if (slot >= choices_.size()) return;
  Choice& choice = choices_[slot];
  if (choice.finish) return;
  choice.completion_tokens = out.completion_tokens;
  if (out.finish && failed(*out.finish)) return fail(*exchange, out);
  if (out.finish) {
    choice.finish = out.finish;
    ++num_finished_;
  }
  if (!out.prompt_logprobs.empty()) choice.prompt_logprobs = std::move(out.prompt_logprobs);
  for (const RowLogprobs& r : out.logprobs) choice.cumulative_logprob += r.sampled.logprob;
  if (settings_.stream) return on_stream_output(*exchange, prompt, choice, out);

  choice.text += out.text;
  if (settings_.logprobs) {
    choice.tokens.insert(choice.tokens.end(), out.token_ids.begin(), out.token_ids.end());
    choice.logprobs.insert(choice.logprobs.end(), out.logprobs.begin(), out.logprobs.end());
  }
  if (num_finished_ < static_cast<int32_t>(choices_.size())) return;
  reply_whole(*exchange);
}

void GenerationStream::reply_whole(HttpExchange& exchange) {
  finished_ = true;
  const size_t best_of = static_cast<size_t>(std::max(1, settings_.best_of));
  const size_t n = static_cast<size_t>(std::max(1, settings_.n));
  std::vector<ChoiceResult> results;
  for (size_t p = 0; p * best_of < choices_.size(); ++p) {
    // The candidates of this prompt, best cumulative logprob first when some are dropped (ties
    // keep engine order, so best_of = n returns the choices as generated).
    std::vector<size_t> order(best_of);
    std::iota(order.begin(), order.end(), p * best_of);
    if (best_of > n) {
      std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return choices_[a].cumulative_logprob > choices_[b].cumulative_logprob;
      });
    }
    for (size_t r = 0; r < n; ++r) {
      Choice& c = choices_[order[r]];
      ChoiceResult result{static_cast<int32_t>(p * n + r), std::move(c.text), *c.finish,
                          logprobs_json(c, p, /*with_prompt=*/true, c.tokens, c.logprobs)};
      if (settings_.echo) result.text = settings_.prompts[p].text + result.text;
      if (parses_chat()) {
        ChatOutput parser(settings_.chat_output);
        ChatDelta whole = parser.push(result.text);
        ChatDelta rest = parser.flush();
        result.reasoning = whole.reasoning + rest.reasoning;
        result.text = whole.content + rest.content;
        whole.calls.insert(whole.calls.end(), rest.calls.begin(), rest.calls.end());
        result.tool_calls = join_tool_call_pieces(std::move(whole.calls));
      }
      if (settings_.prompt_logprobs) result.prompt_logprobs = prompt_logprobs_json(c, p);
      results.push_back(std::move(result));
    }
  }
  log_finished();
  exchange.reply(
      HttpReply{200, "application/json", completion_response_json(settings_.meta, results, usage()), {}});
}

void GenerationStream::fail(HttpExchange& exchange, const GenerationOutput& out) {
  finished_ = true;
  // One choice failing fails the response: the others need not run on.
  if (choices_.size() > 1) abort_all();
  end_with_error(exchange, failure(out));
}

void GenerationStream::cut(const ApiError& error) {
  auto exchange = exchange_.lock();
  if (!exchange || exchange->client_gone() || finished_) return;
  finished_ = true;
  abort_all();
  end_with_error(*exchange, error);
}

void GenerationStream::end_with_error(HttpExchange& exchange, const ApiError& error) {
  LOOM_LOG_INFO("request {}: failed ({}){}", settings_.meta.id, error.what(),
                settings_.user.empty() ? "" : ", user " + settings_.user);
  if (!settings_.stream) {
    return exchange.reply(HttpReply{error.status, "application/json", error_json(error), {}});
  }
  exchange.write(sse_event(error_json(error)));
  exchange.write(std::string(kSseDone));
  exchange.end_stream();
}

void GenerationStream::on_stream_output(HttpExchange& exchange, size_t prompt, Choice& choice,
                                        GenerationOutput& out) {
  ChunkChoice chunk;
  // Streaming never drops candidates (best_of == n): the engine's index is the choice's rank.
  chunk.index = static_cast<int32_t>(prompt) * std::max(1, settings_.n) + out.index;
  if (parses_chat()) {
    stream_parsed_chat(exchange, chunk.index, choice, out);
    return end_stream_if_done(exchange);
  }
  chunk.finish = out.finish;
  const bool first = !choice.started;
  choice.started = true;
  const bool echo_now = first && settings_.echo && settings_.meta.kind == ApiKind::kCompletion;
  const bool has_logprobs = settings_.logprobs && (!out.logprobs.empty() || echo_now);
  // Empty deltas are not sent (unless they carry logprobs); the last chunk of a choice carries
  // its finish_reason even when empty. With echo, the first chunk opens with the prompt.
  chunk.text = echo_now ? settings_.prompts[prompt].text + out.text : out.text;
  if (first && settings_.prompt_logprobs) chunk.prompt_logprobs = prompt_logprobs_json(choice, prompt);
  if (!chunk.text.empty() || out.finish || has_logprobs || !chunk.prompt_logprobs.is_null()) {
    if (has_logprobs) chunk.logprobs = logprobs_json(choice, prompt, echo_now, out.token_ids, out.logprobs);
    write_chunk(exchange, chunk);
  }
  end_stream_if_done(exchange);
}

bool GenerationStream::parses_chat() const {
  return settings_.meta.kind == ApiKind::kChat &&
         (settings_.chat_output.reasoning || settings_.chat_output.tool_calls != ToolCallFormat::kNone);
}

void GenerationStream::stream_parsed_chat(HttpExchange& exchange, int32_t index, Choice& choice,
                                          GenerationOutput& out) {
  if (!choice.chat) choice.chat = std::make_unique<ChatOutput>(settings_.chat_output);
  ChatDelta delta = choice.chat->push(out.text);
  if (out.finish) {
    ChatDelta rest = choice.chat->flush();
    delta.reasoning += rest.reasoning;
    delta.content += rest.content;
    delta.calls.insert(delta.calls.end(), rest.calls.begin(), rest.calls.end());
  }
  const bool has_logprobs = settings_.logprobs && !out.logprobs.empty();
  ChunkChoice chunk;
  chunk.index = index;
  if (!delta.reasoning.empty() || !delta.content.empty() || has_logprobs) {
    chunk.reasoning = delta.reasoning;
    chunk.text = delta.content;
    if (has_logprobs) chunk.logprobs = logprobs_json(choice, 0, false, out.token_ids, out.logprobs);
    write_chunk(exchange, chunk);
  }
  // As OpenAI streams a call: index, id and name first, then its arguments piece by piece.
  for (const ToolCallOut& piece : delta.calls) {
    std::vector<Json> deltas;
    if (piece.begins) deltas.push_back(tool_call_header_delta(piece));
    if (!piece.arguments.empty()) deltas.push_back(tool_call_arguments_delta(piece));
    for (Json& d : deltas) {
      ChunkChoice c;
      c.index = index;
      c.tool_calls = Json::array({std::move(d)});
      write_chunk(exchange, c);
    }
  }
  if (out.finish) {
    ChunkChoice last;
    last.index = index;
    last.finish = out.finish;
    last.finish_tool_calls = choice.chat->num_calls() > 0;
    write_chunk(exchange, last);
  }
}

void GenerationStream::end_stream_if_done(HttpExchange& exchange) {
  if (num_finished_ < static_cast<int32_t>(choices_.size())) return;
  finished_ = true;
  log_finished();
  if (settings_.include_usage) exchange.write(sse_event(usage_chunk_json(settings_.meta, usage())));
  exchange.write(std::string(kSseDone));
  exchange.end_stream();
}

void GenerationStream::write_chunk(HttpExchange& exchange, const ChunkChoice& chunk) {
  exchange.write(sse_event(stream_chunk_json(settings_.meta, chunk, settings_.include_usage)));
}

void GenerationStream::log_finished() const {
  const Usage u = usage();
  // The request log line: the OpenAI `user` is what lets an operator tie a request to a client.
  LOOM_LOG_INFO("request {}: {} prompt(s), {} choice(s), {} prompt + {} completion tokens{}", settings_.meta.id,
                request_ids_.size(), choices_.size(), u.prompt_tokens, u.completion_tokens,
                settings_.user.empty() ? "" : ", user " + settings_.user);
}

}  // namespace loom
