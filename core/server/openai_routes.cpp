#include "core/server/openai_routes.hpp"

#include <limits>

#include "core/tokenizer/tokenizer.hpp"
#include "core/server/api_context.hpp"
#include "core/server/embedding_routes.hpp"
#include "core/server/generation_routes.hpp"
#include "core/server/json_fields.hpp"
#include "core/server/metrics_text.hpp"
#include "core/server/template_routes.hpp"
#include "core/server/tokenize_routes.hpp"
#include "core/server/openai_responses.hpp"

namespace loom {
namespace {

namespace http = boost::beast::http;
using ExchangePtr = std::shared_ptr<HttpExchange>;

constexpr std::string_view kModelsPrefix = "/v1/models/";

HttpReply json_reply(std::string body) {
  return HttpReply{200, "application/json", std::move(body), {}};
}

void handle_models(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    api.check_api_key(request);
    ex->reply(json_reply(models_json(api.engine.model_info())));
  });
}

// GET /v1/models/{id}: the served model's card, or OpenAI's 404 for any other id.
void handle_model(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    api.check_api_key(request);
    const std::string_view target(request.target().data(), request.target().size());
    const std::string id(target.substr(kModelsPrefix.size(), target.find('?') - kModelsPrefix.size()));
    const ModelInfo& info = api.engine.model_info();
    if (id != info.name) {
      throw ApiError(404, "The model '" + id + "' does not exist", "model", "invalid_request_error",
                     "model_not_found");
    }
    ex->reply(json_reply(model_json(info)));
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
                      render_metrics(api.engine.stats(), api.engine.model_info().name,
                                     api.options.metrics_prefix),
                      {}});
}

}  // namespace

HttpReply api_error_reply(const ApiError& error) {
  HttpReply reply{error.status, "application/json", error_json(error), {}};
  if (error.retry_after_s > 0) reply.headers.emplace_back("Retry-After", std::to_string(error.retry_after_s));
  return reply;
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
  router.add_prefix(http::verb::get, std::string(kModelsPrefix),
                    [api](const HttpRequest& r, ExchangePtr ex) { handle_model(*api, r, ex); });
  router.add(http::verb::get, "/health",
             [api](const HttpRequest&, ExchangePtr ex) { handle_health(*api, ex); });
  router.add(http::verb::get, "/metrics",
             [api](const HttpRequest&, ExchangePtr ex) { handle_metrics(*api, ex); });
  add_template_routes(router, api);
  add_tokenize_routes(router, api);
  add_embedding_routes(router, api);
}

}  // namespace loom
