#include "core/server/openai_routes.hpp"

#include <algorithm>
#include <limits>

#include "core/tokenizer/tokenizer.hpp"
#include "core/server/api_context.hpp"
#include "core/server/embedding_routes.hpp"
#include "core/server/generation_routes.hpp"
#include "core/server/json_fields.hpp"
#include "core/server/metrics_text.hpp"
#include "core/server/template_routes.hpp"
#include "core/server/tokenize_routes.hpp"
#include "core/server/tokenizer_info_route.hpp"
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

void handle_metrics(const ApiContext& api, const HttpRequest& request, const ExchangePtr& ex) {
  reply_errors(*ex, [&] {
    if (!api.options.limits.metrics_public) api.check_api_key(request);
    ex->reply(HttpReply{200,
                        kMetricsContentType,
                        render_metrics(api.engine.stats(), api.engine.model_info().name,
                                       api.options.metrics_prefix),
                        {}});
  });
}

// [server] cors_allow_origins: an allowed Origin gets Access-Control-Allow-Origin on every
// response, and its preflight (OPTIONS with Access-Control-Request-Method) a 204 saying what may
// be sent. With no origins configured nothing is added, so browsers keep their same-origin rule.
bool cors_filter(const ApiContext& api, const HttpRequest& request, HttpExchange& ex) {
  const auto& allowed = api.options.limits.cors_allow_origins;
  const auto origin_field = request[http::field::origin];
  if (allowed.empty() || origin_field.empty()) return false;
  const std::string origin(origin_field);
  const bool any = std::find(allowed.begin(), allowed.end(), "*") != allowed.end();
  if (!any && std::find(allowed.begin(), allowed.end(), origin) == allowed.end()) return false;
  ex.add_header("Access-Control-Allow-Origin", any ? "*" : origin);
  if (!any) ex.add_header("Vary", "Origin");
  if (request.method() != http::verb::options || request[http::field::access_control_request_method].empty()) {
    return false;
  }
  HttpReply preflight{204, "", "", {}};
  preflight.headers = {{"Access-Control-Allow-Methods", "GET, POST, OPTIONS"},
                       {"Access-Control-Allow-Headers", "Authorization, Content-Type, X-Request-Id"},
                       {"Access-Control-Max-Age", "600"}};
  ex.reply(std::move(preflight));
  return true;
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

void add_json_post(HttpRouter& router, const std::shared_ptr<const ApiContext>& api, std::string path,
                   std::function<PreparedAnswer(const ApiContext&, const HttpRequest&)> prepare) {
  router.add(http::verb::post, std::move(path), [api, prepare](HttpRequest& r, ExchangePtr ex) {
    bool checked = false;
    reply_errors(*ex, [&] {
      api->check_api_key(r);
      api->check_json_body(r);
      checked = true;
    });
    if (!checked) return;
    prepare_then_answer(api, std::move(r), ex, [api, prepare](const HttpRequest& req) { return prepare(*api, req); });
  });
}

void add_openai_routes(HttpRouter& router, EngineInterface& engine, OpenAiRouteOptions options) {
  const int32_t prepare_threads = options.limits.prepare_threads;
  auto api = std::make_shared<const ApiContext>(
      ApiContext{engine, std::move(options), std::make_shared<PreparePool>(prepare_threads)});
  router.set_filter([api](const HttpRequest& r, HttpExchange& ex) { return cors_filter(*api, r, ex); });
  add_json_post(router, api, "/v1/completions", prepare_completions);
  add_json_post(router, api, "/v1/chat/completions", prepare_chat_completions);
  router.add(http::verb::get, "/v1/models",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_models(*api, r, ex); });
  router.add_prefix(http::verb::get, std::string(kModelsPrefix),
                    [api](const HttpRequest& r, ExchangePtr ex) { handle_model(*api, r, ex); });
  for (http::verb verb : {http::verb::get, http::verb::head}) {  // HEAD for probes that send it
    router.add(verb, "/health", [api](const HttpRequest&, ExchangePtr ex) { handle_health(*api, ex); });
  }
  router.add(http::verb::get, "/metrics",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_metrics(*api, r, ex); });
  router.add(http::verb::get, "/tokenizer_info",
             [api](const HttpRequest& r, ExchangePtr ex) { handle_tokenizer_info(*api, r, ex); });
  add_json_post(router, api, "/apply-template", prepare_apply_template);
  add_json_post(router, api, "/tokenize", prepare_tokenize);
  add_json_post(router, api, "/detokenize", prepare_detokenize);
  add_json_post(router, api, "/v1/embeddings", prepare_embeddings);
}

}  // namespace loom
