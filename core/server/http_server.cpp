#include "core/server/http_server.hpp"

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/server/openai_routes.hpp"

namespace loom {

ServerOptions server_options(const ServerConfig& config) {
  ServerOptions options;
  options.host = config.host;
  options.port = config.port;
  options.threads = config.http_threads;
  options.max_body_bytes = config.max_body_bytes;
  options.api_key = config.api_key;
  options.metrics_prefix = config.metrics_prefix;
  options.limits = config.limits;
  return options;
}

HttpServer::HttpServer(EngineInterface& engine, ServerOptions options)
    : drain_(std::chrono::seconds(options.limits.drain_timeout)),
      draining_(std::make_shared<std::atomic<bool>>(false)) {
  LOOM_CHECK(options.max_body_bytes > 0,
             "server.max_body_bytes must be > 0, got " + std::to_string(options.max_body_bytes));
  auto router = std::make_shared<HttpRouter>(
      [](unsigned status, const std::string& message) { return api_error_reply(status, message); });
  add_openai_routes(*router, engine,
                    OpenAiRouteOptions{options.api_key, draining_, options.metrics_prefix, options.chat_template,
                                       options.chat_output, options.limits});
  const ServerLimits& l = options.limits;
  HttpListenerOptions listen{options.host,
                             options.port,
                             options.threads,
                             static_cast<uint64_t>(options.max_body_bytes),
                             std::chrono::seconds(l.idle_timeout),
                             std::chrono::seconds(l.header_timeout),
                             std::chrono::seconds(l.body_timeout),
                             std::chrono::seconds(l.write_timeout),
                             l.max_connections,
                             static_cast<uint64_t>(l.max_unsent_bytes),
                             static_cast<uint64_t>(l.max_response_bytes)};
  listener_ = std::make_unique<HttpListener>(std::move(listen), std::move(router));
}

HttpServer::~HttpServer() { stop(std::chrono::milliseconds(0)); }

void HttpServer::start() { listener_->start(); }

uint16_t HttpServer::port() const { return listener_->port(); }

void HttpServer::stop() { stop(drain_); }

void HttpServer::stop(std::chrono::milliseconds drain) {
  draining_->store(true);
  listener_->stop(drain);
}

}  // namespace loom
