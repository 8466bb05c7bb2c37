// The transport: an acceptor on host:port and N I/O threads running one io_context; each
// connection is an HttpSession on its own strand. Knows routes only through the HttpRouter.
// Past max_connections a new connection is answered 503 and closed; when accept itself fails for
// want of resources (EMFILE: no file descriptor left) it backs off, 50 ms doubling to 1 s, and
// logs at most one line per 10 s saying how often it failed.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <atomic>
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
  std::chrono::seconds idle_timeout{0};         // see SessionContext; 0 = none
  std::chrono::seconds header_timeout{0};
  std::chrono::seconds body_timeout{0};
  std::chrono::seconds write_timeout{0};
  int64_t max_connections = 0;                  // 0 = no limit
  uint64_t max_unsent_bytes = 0;                // 0 = no limit
  uint64_t max_response_bytes = 0;              // 0 = no limit
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
  int64_t connections() const { return context_.connections.load(); }
  int64_t accept_failures() const { return accept_failures_.load(); }

  // Stops accepting; waits up to `drain` for pending responses to complete; then has every
  // response still pending ended by its handler (HttpExchange::on_server_stop: a stream gets an
  // error event and its end) and waits a moment for those to go out; then closes every connection
  // (what is left sees its client go away, so the engine aborts it) and joins the I/O threads.
  // Idempotent; call from any thread but an I/O thread.
  void stop(std::chrono::milliseconds drain = std::chrono::milliseconds(0));

 private:
  void accept();
  void on_accept_failure(const boost::system::error_code& ec);
  void close_sessions();
  void cut_sessions();
  bool sessions_alive();

  HttpListenerOptions options_;
  SessionContext context_;  // declared before io_ so it outlives every session
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer accept_backoff_;  // on the acceptor's strand
  std::chrono::milliseconds backoff_{0};
  std::atomic<int64_t> accept_failures_{0};
  int64_t failures_unlogged_ = 0;
  std::chrono::steady_clock::time_point last_failure_log_{};
  std::vector<std::thread> threads_;
  uint16_t port_ = 0;
  bool started_ = false;
  bool stopped_ = false;
};

}  // namespace loom
