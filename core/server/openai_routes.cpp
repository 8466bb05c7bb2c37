#include "core/server/openai_routes.hpp"

#include <limits>

#include "core/model/tokenizer.hpp"
#include "core/server/api_context.hpp"
#include "core/server/generation_routes.hpp"
#include "core/server/json_fields.hpp"
#include "core/server/metrics_text.hpp"
#include "core/server/openai_responses.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;
using ExchangePtr = std::shared_ptr<HttpExchange>;

HttpReply json_reply(std::string body) {
  return HttpReply{200, "application/json", std::move(body), {}};
}

void handle_models(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    api.check_api_key(request);
    ex->reply(json_reply(models_json(api.engine.model_info())));
  });
}

void handle_health(const ApiContext& api, const ExchangePtr& ex) {
  const bool draining = api.options.draining && api.options.draining->load();
  ex->reply(HttpReply{draining ? 503u : 200u,
                      "application/json",
                      dump_json(Json{{"status", draining ? "draining" : "ok"}}),
                      {}});
}

void handle_metrics(const ApiContext& api, const ExchangePtr& ex) {
  ex->reply(HttpReply{200,
                      kMetricsContentType,
                      render_metrics(api.engine.stats(), api.engine.model_info().name),
                      {}});
}

// POST /tokenize {"prompt" | "text": string, "add_special"?: bool (default true)}
void handle_tokenize(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    const Json body = parse_json_object(request.body());
    api.check_model(read_string(body, "model", "model"));
    auto text = read_string(body, "prompt", "prompt");
    if (!text) text = read_string(body, "text", "text");
    if (!text) throw bad_field("prompt", "'prompt' (or 'text') is required");
    const bool add_special = read_bool(body, "add_special", "add_special").value_or(true);
    const std::vector<int32_t> ids = api.engine.tokenizer().encode(*text, add_special);
    ex->reply(
        json_reply(dump_json(Json{{"tokens", ids},
                                  {"count", ids.size()},
                                  {"max_model_len", api.engine.model_info().max_model_len}})));
  });
}

// POST /detokenize {"tokens": [ids]}
void handle_detokenize(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    const Json body = parse_json_object(request.body());
    api.check_model(read_string(body, "model", "model"));
    const auto it = body.find("tokens");
    if (it == body.end() || it->is_null()) throw bad_field("tokens", "'tokens' is required");
    if (!it->is_array()) {
      throw bad_field("tokens",
                      "'tokens' must be an array of token ids, got " + json_type_text(*it));
    }
    const int32_t vocab = api.vocab_size();
    std::vector<int32_t> ids;
    for (size_t i = 0; i < it->size(); ++i) {
      ids.push_back(static_cast<int32_t>(
          as_int((*it)[i], "tokens[" + std::to_string(i) + "]", 0, vocab - 1)));
    }
    // The text may end inside a character; dump_json shows such bytes as U+FFFD.
    ex->reply(json_reply(dump_json(Json{{"prompt", api.engine.tokenizer().decode(ids)}})));
  });
}

}  // namespace

HttpReply api_error_reply(const ApiError& error) {
  return HttpReply{error.status, "application/json", error_json(error), {}};
}

HttpReply api_error_reply(unsigned status, const std::string& message) {
  return api_error_reply(ApiError(status, message, std::nullopt,
                                  status >= 500 ? "server_error" : "invalid_request_error"));
}

void add_openai_routes(HttpRouter& router, EngineInterface& engine, OpenAiRouteOptions options) {
  auto api = std::make_shared<const ApiContext>(ApiContext{engine, std::move(options)});
  router.add(http::verb::post, "/v1/completions",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_completions(*api, r, ex); });
  router.add(http::verb::post, "/v1/chat/completions",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_chat_completions(*api, r, ex); });
  router.add(http::verb::get, "/v1/models",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_models(*api, r, ex); });
  router.add(http::verb::get, "/health",
             [api](const HttpRequest&, ExchangePtr ex) { handle_health(*api, ex); });
  router.add(http::verb::get, "/metrics",
             [api](const HttpRequest&, ExchangePtr ex) { handle_metrics(*api, ex); });
  router.add(http::verb::post, "/tokenize",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_tokenize(*api, r, ex); });
  router.add(http::verb::post, "/detokenize",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_detokenize(*api, r, ex); });
}

}  // namespace loom
