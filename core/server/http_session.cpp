#include "core/server/http_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "core/server/http_wire.hpp"

namespace loom {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = boost::beast::http;
using boost::system::error_code;

namespace {
constexpr size_t kWatchReadBytes = 4096;
constexpr auto kLingerTime = std::chrono::seconds(2);
constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
}  // namespace

class SessionPoster final : public StrandPoster {
 public:
  explicit SessionPoster(asio::any_io_executor strand) : strand_(std::move(strand)) {}

  void post(std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    if (strand_) asio::post(*strand_, std::move(fn));
  }
  // Called while the io_context is alive: the strand handle must not outlive it.
  void close() {
    std::lock_guard lock(mutex_);
    strand_.reset();
  }

 private:
  std::mutex mutex_;
  std::optional<asio::any_io_executor> strand_;
};

class SessionExchange final : public HttpExchange {
 public:
  SessionExchange(std::weak_ptr<HttpSession> session, std::shared_ptr<SessionPoster> poster,
                  unsigned version, bool keep_alive)
      : session_(std::move(session)),
        poster_(std::move(poster)),
        version_(version),
        keep_alive_(keep_alive) {}

  std::shared_ptr<StrandPoster> poster() override { return poster_; }
  void hold(std::shared_ptr<void> state) override { held_.push_back(std::move(state)); }

  void reply(HttpReply reply) override {
    auto session = open_session();
    if (!session) return;
    started_ = true;
    for (auto& h : extra_headers_) reply.headers.push_back(std::move(h));
    ResponseHead head{reply.status,      version_,
                      keep_alive_,       std::move(reply.content_type),
                      reply.body.size(), std::move(reply.headers)};
    session->enqueue(serialize_head(head) + reply.body, /*ends_response=*/true);
  }

  void begin_stream(unsigned status, std::string content_type) override {
    auto session = open_session();
    if (!session) return;
    started_ = streaming_ = true;
    // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
    if (version_ == 10) session->keep_alive_ = keep_alive_ = false;
    ResponseHead head{status,       version_,
                      keep_alive_,  std::move(content_type),
                      std::nullopt, {{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}}};
    for (auto& h : extra_headers_) head.headers.push_back(std::move(h));
    session->enqueue(serialize_head(head), false);
  }

  void write(std::string data) override {
    auto session = stream_session();
    if (!session || data.empty()) return;
    session->enqueue(version_ == 10 ? std::move(data) : chunk_frame(data), false);
  }

  void end_stream() override {
    auto session = stream_session();
    if (!session) return;
    ended_ = true;
    session->enqueue(version_ == 10 ? std::string() : std::string(kLastChunk), true);
  }

  void add_header(std::string name, std::string value) override {
    if (!started_) extra_headers_.emplace_back(std::move(name), std::move(value));
  }

  bool client_gone() const override { return gone_; }
  void on_client_gone(std::function<void()> fn) override {
    if (gone_) {
      fn();
    } else if (!done_) {
      on_gone_ = std::move(fn);
    }
  }

  // Session side.
  void mark_done() { done_ = true; }
  void mark_gone() {
    if (gone_ || done_) return;
    gone_ = true;
    if (auto fn = std::move(on_gone_)) fn();
  }
  void release() {
    on_gone_ = nullptr;
    held_.clear();
  }

 private:
  std::shared_ptr<HttpSession> open_session() {
    if (started_ || gone_ || done_) return nullptr;
    return session_.lock();
  }
  std::shared_ptr<HttpSession> stream_session() {
    if (!streaming_ || ended_ || gone_ || done_) return nullptr;
    return session_.lock();
  }

  std::weak_ptr<HttpSession> session_;
  std::shared_ptr<SessionPoster> poster_;
  unsigned version_;
  bool keep_alive_;
  bool started_ = false, streaming_ = false, ended_ = false, gone_ = false, done_ = false;
  std::function<void()> on_gone_;
  std::vector<std::shared_ptr<void>> held_;
  std::vector<std::pair<std::string, std::string>> extra_headers_;  // add_header, for the response head
};

HttpSession::HttpSession(asio::ip::tcp::socket socket, SessionContext& context)
    : socket_(std::move(socket)),
      context_(context),
      poster_(std::make_shared<SessionPoster>(socket_.get_executor())),
      linger_timer_(socket_.get_executor()) {}

HttpSession::~HttpSession() { poster_->close(); }

void HttpSession::start() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

void HttpSession::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->client_gone(); });
}

void HttpSession::read_header() {
  if (closed_) return;
  parser_.emplace();
  parser_->body_limit(context_.max_body_bytes);
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void HttpSession::on_header(error_code ec) {
  if (closed_) return;
  if (ec) return on_read_error(ec);
  const auto& request = parser_->get();
  if (request.version() == 11 && beast::iequals(request[http::field::expect], "100-continue")) {
    // curl sends bodies over 1 KiB only after this (or a 1 s wait).
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code wec, size_t) {
                        if (wec) return self->close();
                        self->read_body();
                      });
    return;
  }
  read_body();
}

void HttpSession::read_body() {
  if (closed_) return;
  http::async_read(socket_, buffer_, *parser_,
                   [self = shared_from_this()](error_code ec, size_t) { self->on_body(ec); });
}

void HttpSession::on_body(error_code ec) {
  if (closed_) return;
  if (ec) return on_read_error(ec);
  dispatch();
}

void HttpSession::on_read_error(error_code ec) {
  if (ec == http::error::body_limit) {
    return reply_and_close(413, "request body is larger than the limit of " +
                                    std::to_string(context_.max_body_bytes) + " bytes");
  }
  if (ec == http::error::header_limit) {
    return reply_and_close(431, "request header fields are too large");
  }
  const bool parse_error =
      ec.category() == http::make_error_code(http::error::bad_target).category() &&
      ec != http::error::end_of_stream && ec != http::error::partial_message;
  if (parse_error) return reply_and_close(400, "malformed HTTP request: " + ec.message());
  close();  // EOF between requests, a reset, or a cancelled read
}

void HttpSession::dispatch() {
  HttpRequest request = parser_->release();
  parser_.reset();
  version_ = request.version() == 10 ? 10 : 11;
  keep_alive_ = request.keep_alive();
  exchange_ = std::make_shared<SessionExchange>(weak_from_this(), poster_, version_, keep_alive_);
  ++context_.active_requests;
  const auto exchange = exchange_;  // the handler may finish the response before it returns
  context_.router->dispatch(request, exchange);
  // Watch for the client leaving, unless it already sent its next request (pipelining): a
  // read would then wait for bytes that may never come while those already here go unparsed.
  if (!watching_ && buffer_.size() == 0) watch();
}

void HttpSession::watch() {
  if (closed_) return;
  watching_ = true;
  socket_.async_read_some(
      buffer_.prepare(kWatchReadBytes),
      [self = shared_from_this()](error_code ec, size_t n) { self->on_watch(ec, n); });
}

void HttpSession::on_watch(error_code ec, size_t n) {
  watching_ = false;
  if (closed_) return;
  if (ec) {
    if (exchange_) return client_gone();
    return close();
  }
  buffer_.commit(n);
  if (lingering_) {
    buffer_.consume(buffer_.size());
    return watch();
  }
  // Bytes while a response is pending are the next (pipelined) request: the client is alive, so
  // stop watching; finish_response parses them.
  if (exchange_ || writing_) return;
  read_header();
}

void HttpSession::enqueue(std::string bytes, bool ends_response) {
  if (closed_) return;
  out_.push_back(Outgoing{std::move(bytes), ends_response});
  if (!writing_) write_next();
}

void HttpSession::write_next() {
  if (closed_ || out_.empty()) return;
  writing_ = true;
  asio::async_write(socket_, asio::buffer(out_.front().bytes),
                    [self = shared_from_this()](error_code ec, size_t) { self->on_write(ec); });
}

void HttpSession::on_write(error_code ec) {
  writing_ = false;
  if (closed_) return;
  if (ec) return client_gone();
  const bool ends_response = out_.front().ends_response;
  out_.pop_front();
  if (ends_response) {
    finish_response();
    if (closed_) return;
  }
  write_next();
}

void HttpSession::finish_response() {
  if (auto exchange = std::move(exchange_)) {
    --context_.active_requests;
    exchange->mark_done();
    exchange->release();
  }
  if (!keep_alive_) {
    // Half-close and read to EOF before closing: closing with unread input would reset the
    // connection and could destroy the response before the client reads it (e.g. a 413 sent
    // while the client is still uploading).
    lingering_ = true;
    error_code ignored;
    socket_.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
    linger_timer_.expires_after(kLingerTime);
    linger_timer_.async_wait([self = shared_from_this()](error_code tec) {
      if (!tec) self->close();
    });
    if (!watching_) watch();
    return;
  }
  if (!watching_) read_header();
}

void HttpSession::reply_and_close(unsigned status, const std::string& message) {
  keep_alive_ = false;
  HttpReply reply = context_.router->error(status, message);
  ResponseHead head{status, 11, false, reply.content_type, reply.body.size(), reply.headers};
  enqueue(serialize_head(head) + reply.body, /*ends_response=*/true);
}

void HttpSession::client_gone() {
  if (auto exchange = std::move(exchange_)) {
    --context_.active_requests;
    exchange->mark_gone();
    exchange->release();
  }
  close();
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  error_code ignored;
  linger_timer_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace loom
