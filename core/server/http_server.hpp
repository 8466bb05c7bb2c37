// loom-server's HTTP side: the OpenAI-compatible API of one engine on host:port. It owns the
// transport (HttpListener) and the routes; main() builds it, start()s it, and stop()s it on
// SIGTERM.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>

#include "core/config/server_limits.hpp"
#include "core/engine/engine_api.hpp"
#include "core/server/http_listener.hpp"
#include "core/server/openai_routes.hpp"

namespace loom {

class ChatTemplate;

struct ServerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                      // 0 = an ephemeral port (tests); port() tells which
  int32_t threads = 2;                       // HTTP I/O threads
  int64_t max_body_bytes = 8 * 1024 * 1024;  // larger request bodies get a 413
  std::string api_key;  // non-empty: /v1/* requires "Authorization: Bearer <api_key>"
  std::string metrics_prefix = "loom";  // [server] metrics_prefix: "loom" or "vllm"
  std::shared_ptr<const ChatTemplate> chat_template;  // null = the model's own
  ChatOutputConfig chat_output;
  ServerLimits limits;  // [server] limits, timeouts, drain and security switches
};

struct ServerConfig;
// The options of [server] (host, port, threads, body limit, key, metrics prefix, limits); the
// chat template and output parsing come from [model] and are the caller's to fill.
ServerOptions server_options(const ServerConfig& config);

class HttpServer {
 public:
  // `engine` must outlive the server.
  HttpServer(EngineInterface& engine, ServerOptions options);
  ~HttpServer();

  // Binds and serves in background threads; throws loom::Error naming host:port on failure.
  void start();
  uint16_t port() const;

  // Graceful: stops accepting, /health turns 503, waits up to `drain` (default: the configured
  // drain_timeout) for pending responses, then ends what is left with an error the client can
  // read (a stream: an error event and [DONE]) and aborts it in the engine, closes all
  // connections and joins the threads. Call from any thread but an HTTP one.
  void stop();
  void stop(std::chrono::milliseconds drain);

 private:
  std::chrono::milliseconds drain_;
  std::shared_ptr<std::atomic<bool>> draining_;
  std::unique_ptr<HttpListener> listener_;
};

}  // namespace loom
