#include "core/server/http_listener.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"

namespace loom {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using boost::system::error_code;

HttpListener::HttpListener(HttpListenerOptions options, std::shared_ptr<const HttpRouter> router)
    : options_(std::move(options)),
      io_(options_.threads > 0 ? options_.threads : 1),
      acceptor_(asio::make_strand(io_)),
      accept_backoff_(acceptor_.get_executor()) {
  LOOM_CHECK(options_.threads >= 1,
             "server.http_threads must be >= 1, got " + std::to_string(options_.threads));
  context_.router = std::move(router);
  context_.max_body_bytes = options_.max_body_bytes;
  context_.idle_timeout = options_.idle_timeout;
  context_.header_timeout = options_.header_timeout;
  context_.body_timeout = options_.body_timeout;
  context_.write_timeout = options_.write_timeout;
  context_.max_unsent_bytes = options_.max_unsent_bytes;
  context_.max_response_bytes = options_.max_response_bytes;
}

HttpListener::~HttpListener() { stop(); }

void HttpListener::start() {
  LOOM_CHECK(!started_, "HttpListener::start called twice");
  const std::string where = options_.host + ":" + std::to_string(options_.port);
  error_code ec;
  tcp::resolver resolver(io_);
  const auto results =
      resolver.resolve(options_.host, std::to_string(options_.port),
                       tcp::resolver::passive | tcp::resolver::numeric_service, ec);
  if (ec || results.empty()) {
    throw Error("cannot resolve server address " + where + ": " + ec.message());
  }
  const tcp::endpoint endpoint = results.begin()->endpoint();
  acceptor_.open(endpoint.protocol(), ec);
  if (!ec) acceptor_.set_option(asio::socket_base::reuse_address(true), ec);
  if (!ec) acceptor_.bind(endpoint, ec);
  if (!ec) acceptor_.listen(asio::socket_base::max_listen_connections, ec);
  if (ec) throw Error("cannot listen on " + where + ": " + ec.message());
  port_ = acceptor_.local_endpoint().port();
  started_ = true;
  accept();
  for (int32_t i = 0; i < options_.threads; ++i) {
    threads_.emplace_back([this] { io_.run(); });
  }
}

void HttpListener::accept() {
  acceptor_.async_accept(asio::make_strand(io_), [this](error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || !acceptor_.is_open()) return;
      return on_accept_failure(ec);
    }
    backoff_ = std::chrono::milliseconds(0);
    error_code ignored;
    socket.set_option(tcp::no_delay(true), ignored);  // SSE chunks go out at once
    auto session = std::make_shared<HttpSession>(std::move(socket), context_);
    {
      std::lock_guard lock(context_.mutex);
      std::erase_if(context_.sessions, [](const auto& w) { return w.expired(); });
      context_.sessions.push_back(session);
    }
    if (options_.max_connections > 0 && context_.connections.load() >= options_.max_connections) {
      session->refuse("the server has " + std::to_string(options_.max_connections) +
                      " connections open, its limit (server.max_connections); retry later");
    } else {
      session->start();
    }
    accept();
  });
}

void HttpListener::on_accept_failure(const error_code& ec) {
  ++accept_failures_;
  ++failures_unlogged_;
  const auto now = std::chrono::steady_clock::now();
  if (now - last_failure_log_ >= std::chrono::seconds(10)) {
    LOOM_LOG_WARN("accept failed: {} ({} time(s) since the last such line); backing off", ec.message(),
                  failures_unlogged_);
    failures_unlogged_ = 0;
    last_failure_log_ = now;
  }
  // Out of descriptors or memory, accepting again at once fails again at once: wait, doubling.
  using std::chrono::milliseconds;
  backoff_ = std::min(milliseconds(1000), std::max(milliseconds(50), backoff_ * 2));
  accept_backoff_.expires_after(backoff_);
  accept_backoff_.async_wait([this](error_code tec) {
    if (!tec && acceptor_.is_open()) accept();
  });
}

void HttpListener::cut_sessions() {
  std::lock_guard lock(context_.mutex);
  for (const auto& weak : context_.sessions) {
    if (auto session = weak.lock()) session->cut();
  }
}

void HttpListener::close_sessions() {
  std::lock_guard lock(context_.mutex);
  for (const auto& weak : context_.sessions) {
    if (auto session = weak.lock()) session->shutdown();
  }
}

bool HttpListener::sessions_alive() {
  std::lock_guard lock(context_.mutex);
  std::erase_if(context_.sessions, [](const auto& w) { return w.expired(); });
  return !context_.sessions.empty();
}

void HttpListener::stop(std::chrono::milliseconds drain) {
  if (!started_ || stopped_) return;
  stopped_ = true;
  asio::post(acceptor_.get_executor(), [this] {
    error_code ignored;
    acceptor_.close(ignored);
    accept_backoff_.cancel();
  });
  using clock = std::chrono::steady_clock;
  const auto poll = std::chrono::milliseconds(5);
  const auto drain_end = clock::now() + drain;
  while (context_.active_requests.load() > 0 && clock::now() < drain_end) {
    std::this_thread::sleep_for(poll);
  }
  if (context_.active_requests.load() > 0) {
    LOOM_LOG_WARN("drain over with {} response(s) pending: ending them", context_.active_requests.load());
    cut_sessions();
    const auto cut_end = clock::now() + std::chrono::seconds(2);
    while (context_.active_requests.load() > 0 && clock::now() < cut_end) std::this_thread::sleep_for(poll);
  }
  close_sessions();
  // Let the sessions run their close handlers (which abort pending requests) before stopping.
  const auto close_end = clock::now() + std::chrono::seconds(2);
  while (sessions_alive() && clock::now() < close_end) std::this_thread::sleep_for(poll);
  io_.stop();
  for (auto& t : threads_) t.join();
  threads_.clear();
}

}  // namespace loom
