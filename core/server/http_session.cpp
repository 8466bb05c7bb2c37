#include "core/server/http_session.hpp"

#include <boost/asio/post.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/string.hpp>
#include <boost/beast/http/error.hpp>
#include <boost/beast/http/read.hpp>

#include "core/common/logging.hpp"
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
  std::shared_ptr<void> post_after(std::chrono::milliseconds delay, std::function<void()> fn) override {
    std::lock_guard lock(mutex_);
    if (!strand_) return nullptr;
    auto timer = std::make_shared<asio::steady_timer>(*strand_, delay);
    timer->async_wait([timer, fn = std::move(fn)](error_code ec) {
      if (!ec) fn();
    });
    // The wait owns the timer; the handle only cancels it, if it is still there.
    return std::shared_ptr<void>(nullptr, [weak = std::weak_ptr<asio::steady_timer>(timer)](void*) {
      if (auto t = weak.lock()) t->cancel();
    });
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
                  unsigned version, bool keep_alive, bool head)
      : session_(std::move(session)),
        poster_(std::move(poster)),
        version_(version),
        keep_alive_(keep_alive),
        head_(head) {}

  std::shared_ptr<StrandPoster> poster() override { return poster_; }
  void hold(std::shared_ptr<void> state) override { held_.push_back(std::move(state)); }

  void reply(HttpReply reply) override {
    auto session = open_session();
    if (!session) return;
    started_ = true;
    const uint64_t limit = session->context_.max_response_bytes;
    if (limit > 0 && reply.body.size() > limit) {
      reply = session->context_.router->error(
          400, "the response would be " + std::to_string(reply.body.size()) +
                   " bytes, more than the server's limit of " + std::to_string(limit) +
                   " (server.max_response_bytes); ask for less");
    }
    for (auto& h : extra_headers_) reply.headers.push_back(h);
    keep_alive_ = keep_alive_ && session->keep_alive_;
    ResponseHead head{reply.status,      version_,
                      keep_alive_,       std::move(reply.content_type),
                      reply.body.size(), std::move(reply.headers)};
    // HEAD: the fields GET would send, no body.
    session->enqueue(serialize_head(head) + (head_ ? std::string() : reply.body), /*ends_response=*/true);
  }

  void begin_stream(unsigned status, std::string content_type) override {
    auto session = open_session();
    if (!session) return;
    started_ = streaming_ = true;
    // HTTP/1.0 has no chunked encoding: the body ends when the connection does.
    if (version_ == 10) session->keep_alive_ = keep_alive_ = false;
    keep_alive_ = keep_alive_ && session->keep_alive_;
    std::vector<std::pair<std::string, std::string>> fields{{"Cache-Control", "no-cache"}, {"X-Accel-Buffering", "no"}};
    for (auto& h : extra_headers_) fields.push_back(h);
    ResponseHead head{status, version_, keep_alive_, std::move(content_type), std::nullopt, std::move(fields)};
    session->enqueue(serialize_head(head), false);
  }

  void write(std::string data) override {
    auto session = stream_session();
    if (!session || data.empty()) return;
    streamed_bytes_ += data.size();
    const uint64_t limit = session->context_.max_response_bytes;
    if (limit > 0 && streamed_bytes_ > limit) {
      // A stream cannot turn into an error response any more: cut it, aborting its request.
      ended_ = true;
      session->cut_later();
      return;
    }
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
  void on_server_stop(std::function<void()> fn) override {
    if (!done_ && !gone_) on_stop_ = std::move(fn);
  }

  // Session side.
  void server_stop() {
    if (auto fn = std::move(on_stop_)) fn();
  }
  void mark_done() { done_ = true; }
  void mark_gone() {
    if (gone_ || done_) return;
    gone_ = true;
    if (auto fn = std::move(on_gone_)) fn();
  }
  void release() {
    on_gone_ = nullptr;
    on_stop_ = nullptr;
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
  bool head_;  // a HEAD request: no body goes out
  bool started_ = false, streaming_ = false, ended_ = false, gone_ = false, done_ = false;
  uint64_t streamed_bytes_ = 0;
  std::vector<std::pair<std::string, std::string>> extra_headers_;  // e.g. CORS, on every response
  std::function<void()> on_gone_;
  std::function<void()> on_stop_;
  std::vector<std::shared_ptr<void>> held_;
};

HttpSession::HttpSession(asio::ip::tcp::socket socket, SessionContext& context)
    : socket_(std::move(socket)),
      context_(context),
      poster_(std::make_shared<SessionPoster>(socket_.get_executor())),
      linger_timer_(socket_.get_executor()),
      deadline_(socket_.get_executor()),
      write_deadline_(socket_.get_executor()) {}

HttpSession::~HttpSession() {
  poster_->close();
  if (counted_) --context_.connections;
}

void HttpSession::start() {
  counted_ = true;
  ++context_.connections;
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->read_header(); });
}

void HttpSession::refuse(const std::string& message) {
  asio::post(socket_.get_executor(), [self = shared_from_this(), message] { self->reply_and_close(503, message); });
}

void HttpSession::cut() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] {
    if (self->exchange_) self->exchange_->server_stop();
  });
}

void HttpSession::shutdown() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->client_gone(); });
}

void HttpSession::arm(Wait what) {
  waiting_ = what;
  const std::chrono::seconds limit = what == Wait::kIdle     ? context_.idle_timeout
                                     : what == Wait::kHeader ? context_.header_timeout
                                     : what == Wait::kBody   ? context_.body_timeout
                                                             : std::chrono::seconds(0);
  deadline_.cancel();
  if (limit.count() <= 0) return;
  deadline_.expires_after(limit);
  deadline_.async_wait([self = shared_from_this(), what](error_code ec) { self->on_deadline(what, ec); });
}

void HttpSession::on_deadline(Wait what, error_code ec) {
  if (ec || closed_ || waiting_ != what) return;
  waiting_ = Wait::kNone;
  error_code ignored;
  socket_.cancel(ignored);  // the read in progress ends with operation_aborted, ignored below
  if (what == Wait::kIdle) return close();
  parser_.reset();
  reply_and_close(408, std::string("the request ") + (what == Wait::kHeader ? "header" : "body") +
                           " did not arrive within " +
                           std::to_string((what == Wait::kHeader ? context_.header_timeout : context_.body_timeout).count()) +
                           " s (server." + (what == Wait::kHeader ? "header" : "body") + "_timeout)");
}

void HttpSession::read_header() {
  if (closed_) return;
  if (buffer_.size() > 0) return start_header();
  // Nothing of the next request yet: wait for its first byte under the idle timeout, so that the
  // header timeout measures only the header's own arrival.
  arm(Wait::kIdle);
  socket_.async_wait(asio::socket_base::wait_read, [self = shared_from_this()](error_code ec) {
    if (self->closed_ || self->waiting_ != Wait::kIdle) return;
    if (ec) return self->close();
    self->start_header();
  });
}

void HttpSession::start_header() {
  parser_.emplace();
  parser_->body_limit(context_.max_body_bytes);
  arm(Wait::kHeader);
  http::async_read_header(
      socket_, buffer_, *parser_,
      [self = shared_from_this()](error_code ec, size_t) { self->on_header(ec); });
}

void HttpSession::on_header(error_code ec) {
  if (closed_ || waiting_ != Wait::kHeader) return;
  if (ec) return on_read_error(ec);
  const auto& request = parser_->get();
  arm(Wait::kBody);
  if (request.version() == 11 && beast::iequals(request[http::field::expect], "100-continue")) {
    // curl sends bodies over 1 KiB only after this (or a 1 s wait).
    asio::async_write(socket_, asio::buffer(kContinue.data(), kContinue.size()),
                      [self = shared_from_this()](error_code wec, size_t) {
                        if (self->closed_ || self->waiting_ != Wait::kBody) return;
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
  if (closed_ || waiting_ != Wait::kBody) return;
  if (ec) return on_read_error(ec);
  waiting_ = Wait::kNone;
  deadline_.cancel();
  dispatch();
}

void HttpSession::on_read_error(error_code ec) {
  waiting_ = Wait::kNone;
  deadline_.cancel();
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
  keep_alive_ = keep_alive_ && !half_closed_ && request.keep_alive();
  exchange_ = std::make_shared<SessionExchange>(weak_from_this(), poster_, version_, keep_alive_,
                                                request.method() == http::verb::head);
  ++context_.active_requests;
  // While the response is pending no read may be outstanding (a pipelined request waits in the
  // buffer, a half-closed client has nothing more to send): the session keeps itself alive.
  pending_self_ = shared_from_this();
  const auto exchange = exchange_;  // the handler may finish the response before it returns
  context_.router->dispatch(request, exchange);
  // Watch for the client leaving, unless it already sent its next request (pipelining): a
  // read would then wait for bytes that may never come while those already here go unparsed.
  if (!watching_ && !half_closed_ && buffer_.size() == 0) watch();
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
  if (ec == asio::error::eof && exchange_ && !lingering_) {
    // A half-close: the client has sent all it will and waits for the answer.
    half_closed_ = true;
    keep_alive_ = false;
    return;
  }
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
  if (context_.max_unsent_bytes > 0 && unsent_bytes_ > context_.max_unsent_bytes) {
    // More output while the client has not read what is queued (one whole reply may be larger:
    // max_response_bytes bounds that): a client that does not read is cut, not buffered for.
    return cut_later();
  }
  unsent_bytes_ += bytes.size();
  out_.push_back(Outgoing{std::move(bytes), ends_response});
  if (!writing_) write_next();
}

// Written piece by piece, each under write_timeout: a client that reads slowly but steadily is
// served, one that stops reading (a full socket buffer, however large the reply) is cut.
void HttpSession::write_next() {
  if (closed_ || out_.empty()) return;
  writing_ = true;
  const uint64_t epoch = ++write_epoch_;
  if (context_.write_timeout.count() > 0) {
    write_deadline_.expires_after(context_.write_timeout);
    write_deadline_.async_wait(
        [self = shared_from_this(), epoch](error_code ec) { self->on_write_deadline(epoch, ec); });
  }
  const std::string& bytes = out_.front().bytes;
  socket_.async_write_some(asio::buffer(bytes.data() + written_, bytes.size() - written_),
                           [self = shared_from_this()](error_code ec, size_t n) { self->on_write(ec, n); });
}

void HttpSession::on_write_deadline(uint64_t epoch, error_code ec) {
  if (ec || closed_ || !writing_ || epoch != write_epoch_) return;
  LOOM_LOG_DEBUG("http: a client read nothing for {} s (server.write_timeout); closing its connection",
                context_.write_timeout.count());
  client_gone();
}

void HttpSession::on_write(error_code ec, size_t n) {
  writing_ = false;
  write_deadline_.cancel();
  if (closed_) return;
  if (ec) return client_gone();
  written_ += n;
  if (written_ < out_.front().bytes.size()) return write_next();
  written_ = 0;
  const bool ends_response = out_.front().ends_response;
  unsent_bytes_ -= out_.front().bytes.size();
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
  const auto self = std::move(pending_self_);  // the caller's handler holds it meanwhile
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
    if (half_closed_) return close();  // its EOF came already
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

void HttpSession::cut_later() {
  asio::post(socket_.get_executor(), [self = shared_from_this()] { self->client_gone(); });
}

void HttpSession::client_gone() {
  if (auto exchange = std::move(exchange_)) {
    --context_.active_requests;
    exchange->mark_gone();
    exchange->release();
  }
  const auto self = std::move(pending_self_);  // kept until close() returns
  close();
}

void HttpSession::close() {
  if (closed_) return;
  closed_ = true;
  waiting_ = Wait::kNone;
  error_code ignored;
  linger_timer_.cancel();
  deadline_.cancel();
  write_deadline_.cancel();
  socket_.shutdown(asio::ip::tcp::socket::shutdown_both, ignored);
  socket_.close(ignored);
}

}  // namespace loom
