// The transport: an acceptor on host:port and N I/O threads running one io_context; each
// connection is an HttpSession on its own strand. Knows routes only through the HttpRouter.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "core/server/http_router.hpp"
#include "core/server/http_session.hpp"

namespace loom {

struct HttpListenerOptions {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;                       // 0 = an ephemeral port; port() tells which
  int32_t threads = 2;                        // I/O threads, >= 1
  uint64_t max_body_bytes = 8 * 1024 * 1024;  // larger bodies get a 413
};

class HttpListener {
 public:
  HttpListener(HttpListenerOptions options, std::shared_ptr<const HttpRouter> router);
  ~HttpListener();  // stop()
  HttpListener(const HttpListener&) = delete;
  HttpListener& operator=(const HttpListener&) = delete;

  // Binds and listens, then starts the I/O threads. Throws loom::Error naming host:port when
  // the address cannot be resolved or bound.
  void start();
  uint16_t port() const { return port_; }
  int64_t active_requests() const { return context_.active_requests.load(); }

  // Stops accepting; waits up to `drain` for pending responses to complete; then closes every
  // connection (pending requests see their client go away, so the engine aborts them) and joins
  // the I/O threads. Idempotent; call from any thread but an I/O thread.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0));

 private:
  void accept();
  void close_sessions();
  bool sessions_alive();

  HttpListenerOptions options_;
  SessionContext context_;  // declared before io_ so it outlives every session
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace loom
