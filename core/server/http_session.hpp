// One client connection: reads requests one at a time (keep-alive; a pipelined request waits
// for the previous response), hands each to the router with an exchange, and writes the reply or
// stream from a queue of byte strings. Everything runs on the connection's strand.
//
// While a response is pending the session keeps a plain read outstanding on the socket so that a
// client that goes away is noticed at once (EOF or error) and the request can be aborted; bytes
// that arrive meanwhile (the next pipelined request) are kept for the next parse, and watching
// stops until then.
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
  std::atomic<int64_t> active_requests{0};  // requests whose response is not complete
  std::mutex mutex;                         // guards sessions
  std::vector<std::weak_ptr<HttpSession>> sessions;
};

class HttpSession : public std::enable_shared_from_this<HttpSession> {
 public:
  HttpSession(boost::asio::ip::tcp::socket socket, SessionContext& context);
  ~HttpSession();

  void start();
  // Any thread: closes the connection, aborting a pending response (server stop).
  void shutdown();

 private:
  friend class SessionExchange;
  struct Outgoing {
    std::string bytes;
    bool ends_response = false;
  };

  void read_header();
  void on_header(boost::system::error_code ec);
  void read_body();
  void on_body(boost::system::error_code ec);
  void on_read_error(boost::system::error_code ec);
  void dispatch();
  void watch();
  void on_watch(boost::system::error_code ec, size_t n);
  void enqueue(std::string bytes, bool ends_response);
  void write_next();
  void on_write(boost::system::error_code ec);
  void finish_response();
  void reply_and_close(unsigned status, const std::string& message);
  void client_gone();
  void close();

  boost::asio::ip::tcp::socket socket_;
  SessionContext& context_;
  std::shared_ptr<SessionPoster> poster_;
  boost::asio::steady_timer linger_timer_;
  boost::beast::flat_buffer buffer_;
  std::optional<boost::beast::http::request_parser<boost::beast::http::string_body>> parser_;
  std::shared_ptr<SessionExchange> exchange_;  // the request whose response is pending
  std::deque<Outgoing> out_;
  unsigned version_ = 11;
  bool keep_alive_ = true;
  bool writing_ = false;
  bool watching_ = false;
  bool lingering_ = false;  // response sent with Connection: close; draining input until EOF
  bool closed_ = false;
};

}  // namespace loom
