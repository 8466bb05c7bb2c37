// One client connection: reads requests one at a time (keep-alive; a pipelined request waits
// for the previous response), hands each to the router with an exchange, and writes the reply or
// stream from a queue of byte strings. Everything runs on the connection's strand.
//
// While a response is pending the session keeps a plain read outstanding on the socket so that a
// client that goes away is noticed at once (an error) and the request can be aborted; bytes
// that arrive meanwhile (the next pipelined request) are kept for the next parse, and watching
// stops until then. An EOF then is a half-close (shutdown(SHUT_WR) after the request): the
// response is still sent, and the connection closed after it; a client that is really gone shows
// when a write fails.
//
// Bounds (SessionContext): the first byte of a request must come within idle_timeout, its header
// within header_timeout, its body within body_timeout (else 408 and close); output queued for a
// client that does not read is capped at max_unsent_bytes, a response body at max_response_bytes
// (a whole reply over it becomes a 400; a stream over it is cut), and a write that makes no
// progress for write_timeout cuts the client (a whole reply the socket cannot take, never read):
// a cut client's request is aborted like a client that left.
#pragma once

#include <atomic>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http/parser.hpp>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/server/http_exchange.hpp"
#include "core/server/http_router.hpp"

namespace loom {

class HttpSession;
class SessionExchange;
class SessionPoster;

// What the listener shares with its sessions; outlives all of them.
struct SessionContext {
  std::shared_ptr<const HttpRouter> router;
  uint64_t max_body_bytes = 0;
  std::chrono::seconds idle_timeout{0};    // 0 = none
  std::chrono::seconds header_timeout{0};
  std::chrono::seconds body_timeout{0};
  std::chrono::seconds write_timeout{0};  // a write that makes no progress for this long cuts the client
  uint64_t max_unsent_bytes = 0;    // 0 = no limit
  uint64_t max_response_bytes = 0;  // 0 = no limit
  std::atomic<int64_t> active_requests{0};  // requests whose response is not complete
  std::atomic<int64_t> connections{0};      // sessions alive (refused ones not counted)
  std::mutex mutex;                         // guards sessions
  std::vector<std::weak_ptr<HttpSession>> sessions;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, SessionContext& context);
  ~HttpSession();

  void start();
  // Answers 503 (too many connections) and closes, instead of start(). Not counted.
  void refuse(const std::string& message);
  // Any thread: the pending response, if any, is ended by its handler's on_server_stop.
  void cut();
  // Any thread: closes the connection, aborting a pending response (server stop).
  void shutdown();

 private:
  friend class SessionExchange;
  struct Outgoing {
    std::string bytes;
    bool ends_response = false;
  };

  enum class Wait { kNone, kIdle, kHeader, kBody };
  void read_header();
  void start_header();
  void arm(Wait what);
  void on_deadline(Wait what, boost::system::error_code ec);
  void on_header(boost::system::error_code ec);
  void read_body();
  void on_body(boost::system::error_code ec);
  void on_read_error(boost::system::error_code ec);
  void dispatch();
  void watch();
  void on_watch(boost::system::error_code ec, size_t n);
  void enqueue(std::string bytes, bool ends_response);
  void write_next();
  void on_write(boost::system::error_code ec, size_t n);
  void on_write_deadline(uint64_t epoch, boost::system::error_code ec);
  void finish_response();
  void reply_and_close(unsigned status, const std::string& message);
  void client_gone();
  void cut_later();  // client_gone from outside the exchange's own call stack
  void close();

  boost::asio::ip::tcp::socket socket_;
  SessionContext& context_;
  std::shared_ptr<SessionPoster> poster_;
  boost::asio::steady_timer linger_timer_;
  boost::asio::steady_timer deadline_;  // the idle / header / body timeout being waited on
  boost::asio::steady_timer write_deadline_;  // the write in progress must make progress by then
  uint64_t write_epoch_ = 0;  // which write write_deadline_ was armed for
  size_t written_ = 0;        // bytes of out_.front() already sent
  Wait waiting_ = Wait::kNone;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<SessionExchange> exchange_;  // the request whose response is pending
  std::shared_ptr<HttpSession> pending_self_;  // set while exchange_ is: see dispatch()
  std::deque<Outgoing> out_;
  uint64_t unsent_bytes_ = 0;  // bytes in out_
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool writing_ = false;
  bool watching_ = false;
  bool lingering_ = false;  // response sent with Connection: close; draining input until EOF
  bool half_closed_ = false;  // the client sent EOF: answer what is pending, then close
  bool counted_ = false;      // counted in context_.connections
  bool closed_ = false;
};

}  // namespace loom
