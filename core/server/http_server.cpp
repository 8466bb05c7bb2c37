#include "core/server/http_server.hpp"

#include "core/common/error.hpp"
#include "core/server/openai_routes.hpp"

namespace loom {

HttpServer::HttpServer(EngineInterface& engine, ServerOptions options)
    : draining_(std::make_shared<std::atomic<bool>>(false)) {
  LOOM_CHECK(options.max_body_bytes > 0,
             "server.max_body_bytes must be > 0, got " + std::to_string(options.max_body_bytes));
  auto router = std::make_shared<HttpRouter>(
      [](unsigned status, const std::string& message) { return api_error_reply(status, message); });
  add_openai_routes(*router, engine,
                    OpenAiRouteOptions{options.api_key, draining_, options.metrics_prefix, options.chat_template,
                                       options.chat_output});
  HttpListenerOptions listen{options.host, options.port, options.threads,
                             static_cast<uint64_t>(options.max_body_bytes)};
  listener_ = std::make_unique<HttpListener>(std::move(listen), std::move(router));
}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

void HttpServer::start() { listener_->start(); }

uint16_t HttpServer::port() const { return listener_->port(); }

void HttpServer::stop(std::chrono::milliseconds drain) {
  draining_->store(true);
  listener_->stop(drain);
}

}  // namespace loom
