// What every OpenAI route handler shares: the engine, the route options, and the checks that
// come before any endpoint's own work (API key, model name, token ids, context length).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/server/http_exchange.hpp"
#include "core/server/openai_routes.hpp"
#include "core/server/prepare_pool.hpp"

namespace loom {

struct ApiContext {
  EngineInterface& engine;
  OpenAiRouteOptions options;
  std::shared_ptr<PreparePool> prepare;  // null: preparation runs on the strand (tests)

  // 401 unless the request carries the configured API key (no-op when none is configured).
  void check_api_key(const HttpRequest& request) const;
  // A JSON body as configured: 415 unless Content-Type is application/json (when required),
  // 400 past the nesting or element limits.
  void check_json_body(const HttpRequest& request) const;
  // 400 (code model_not_found) when `model` is set and is not the served model.
  void check_model(const std::optional<std::string>& model) const;
  int32_t vocab_size() const;
  // The template chat requests are rendered with: --chat-template's, else the model's (or null).
  const ChatTemplate* chat_template() const {
    return options.chat_template ? options.chat_template.get() : engine.chat_template();
  }
};

// 400 naming `param` when ids is empty or an id is outside [0, vocab_size).
void check_prompt_tokens(const std::vector<int32_t>& ids, int32_t vocab_size,
                         const std::string& param);

// The most tokens (prompt + completion) a request may reach, and the limit's name for errors.
struct TokenLimit {
  int32_t tokens = 0;  // <= 0: unknown
  std::string what;    // "This model's maximum context length (max_model_len)", ...
};

// The max_tokens to generate. A requested value must fit: prompt + max_tokens <= limit.tokens
// (400 naming max_tokens otherwise). Unset, it is `fallback` clamped to the room left, or all
// the room left when fallback is unset. The prompt alone must leave room for one token (400
// naming prompt_param). limit.tokens <= 0 means unknown: no check, fallback or 16.
int32_t resolve_max_tokens(size_t n_prompt, std::optional<int32_t> requested, const TokenLimit& limit,
                           std::optional<int32_t> fallback, const std::string& prompt_param);

// Runs fn; a thrown ApiError becomes its error reply, a loom::Error (the engine refusing a
// request) a 400 carrying its message. The exchange is answered only if fn did not answer it.
template <typename Fn>
void reply_errors(HttpExchange& exchange, Fn&& fn);
// The same mapping, returned instead of sent (for work off the strand); anything else thrown is
// a 500. Nothing when fn returned.
template <typename Fn>
std::optional<HttpReply> error_reply_of(Fn&& fn);

// The rest of a prepared request's answer, run on its connection's strand (submit, reply).
using PreparedAnswer = std::function<void(const std::shared_ptr<HttpExchange>&)>;
// Runs prepare(request) on the prepare pool, then its answer on the strand (unless the client
// left meanwhile); an error from either becomes the reply.
void prepare_then_answer(const std::shared_ptr<const ApiContext>& api, HttpRequest&& request,
                         const std::shared_ptr<HttpExchange>& exchange,
                         std::function<PreparedAnswer(const HttpRequest&)> prepare);

}  // namespace loom

#include "core/common/error.hpp"
#include "core/engine/admission.hpp"

namespace loom {

template <typename Fn>
void reply_errors(HttpExchange& exchange, Fn&& fn) {
  try {
    fn();
  } catch (const ApiError& e) {
    exchange.reply(api_error_reply(e));
  } catch (const Overloaded& e) {
    // Admission control refused it: 429, the reason as the code, and when to come back.
    ApiError error(429, e.what(), std::nullopt, "rate_limit_exceeded", e.refusal().reason);
    error.retry_after_s = e.refusal().retry_after_s;
    exchange.reply(api_error_reply(error));
  } catch (const Error& e) {
    exchange.reply(api_error_reply(ApiError(400, e.what())));
  }
}

template <typename Fn>
std::optional<HttpReply> error_reply_of(Fn&& fn) {
  struct Capture final : HttpExchange {
    std::optional<HttpReply> got;
    std::shared_ptr<StrandPoster> poster() override { return nullptr; }
    void hold(std::shared_ptr<void>) override {}
    void add_header(std::string, std::string) override {}
    void reply(HttpReply r) override { got = std::move(r); }
    void begin_stream(unsigned, std::string) override {}
    void write(std::string) override {}
    void end_stream() override {}
    bool client_gone() const override { return false; }
    void on_client_gone(std::function<void()>) override {}
    void on_server_stop(std::function<void()>) override {}
  } capture;
  try {
    reply_errors(capture, fn);
  } catch (const std::exception& e) {
    capture.got = api_error_reply(500, std::string("internal error: ") + e.what());
  }
  return std::move(capture.got);
}

}  // namespace loom
