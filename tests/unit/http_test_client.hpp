// A small synchronous HTTP/1.1 client for tests (unit and e2e): one keep-alive connection,
// every operation bounded by a timeout so a server bug fails the test instead of hanging it.
// Also raw-socket access for malformed requests and mid-stream disconnects, and an SSE parser.
#pragma once

#include <boost/asio/connect.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/flat_buffer.hpp>
#include <boost/beast/http.hpp>
#include <chrono>
#include <cstdint>
#include <limits>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom::test {

struct HttpResponse {
  unsigned status = 0;
  std::string body;
  boost::beast::http::fields headers;
  std::string header(boost::beast::http::field name) const {
    const auto v = headers[name];
    return std::string(v.data(), v.size());
  }
};

class HttpTestClient {
 public:
  using Headers = std::vector<std::pair<std::string, std::string>>;

  explicit HttpTestClient(uint16_t port, std::string host = "127.0.0.1",
                          std::chrono::milliseconds timeout = std::chrono::seconds(10))
      : host_(std::move(host)), port_(port), socket_(io_), timeout_(timeout) {
    connect();
  }

  void connect() {
    boost::system::error_code ignored;
    socket_.close(ignored);
    buffer_.clear();
    boost::asio::ip::tcp::resolver resolver(io_);
    boost::asio::connect(socket_, resolver.resolve(host_, std::to_string(port_)));
  }

  HttpResponse request(boost::beast::http::verb method, const std::string& target,
                       const std::string& body = {}, const Headers& headers = {},
                       unsigned version = 11) {
    namespace http = boost::beast::http;
    http::request<http::string_body> req{method, target, version};
    req.set(http::field::host, host_);
    if (!body.empty() || method == http::verb::post) {
      req.set(http::field::content_type, "application/json");
      req.body() = body;
    }
    for (const auto& [name, value] : headers) req.set(name, value);
    req.prepare_payload();
    run([&](auto done) { http::async_write(socket_, req, done); });
    return read_response();
  }
  HttpResponse get(const std::string& target, const Headers& headers = {}) {
    return request(boost::beast::http::verb::get, target, {}, headers);
  }
  HttpResponse post(const std::string& target, const std::string& body,
                    const Headers& headers = {}) {
    return request(boost::beast::http::verb::post, target, body, headers);
  }

  HttpResponse read_response() {
    namespace http = boost::beast::http;
    http::response_parser<http::string_body> parser;
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
    run([&](auto done) { http::async_read(socket_, buffer_, parser, done); });
    HttpResponse out;
    const auto& res = parser.get();
    out.status = res.result_int();
    out.body = res.body();
    for (const auto& f : res) out.headers.set(f.name_string(), f.value());
    return out;
  }

  void send_raw(const std::string& bytes) {
    run([&](auto done) { boost::asio::async_write(socket_, boost::asio::buffer(bytes), done); });
  }

  // Reads raw bytes until `needle` has been seen; returns everything read. Throws on timeout or
  // when the connection ends first.
  std::string read_raw_until(std::string_view needle) {
    std::string got;
    while (got.find(needle) == std::string::npos) got += read_some();
    return got;
  }

  // True when the server closes the connection (EOF or reset) within the timeout; data that
  // arrives first is discarded.
  bool wait_closed() {
    try {
      while (true) read_some();
    } catch (const boost::system::system_error&) {
      return true;
    } catch (const std::runtime_error&) {
      return false;  // timed out
    }
  }

  // Closes with a reset (SO_LINGER 0), as a killed client or a dropped network looks to a server.
  void reset() {
    boost::system::error_code ignored;
    socket_.set_option(boost::asio::socket_base::linger(true, 0), ignored);
    socket_.close(ignored);
  }

  // Sends FIN (shutdown(SHUT_WR)): the request is complete, the answer still wanted.
  void shutdown_send() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_send, ignored);
  }

  void close() {
    boost::system::error_code ignored;
    socket_.shutdown(boost::asio::ip::tcp::socket::shutdown_both, ignored);
    socket_.close(ignored);
  }

 private:
  std::string read_some() {
    if (buffer_.size() > 0) {
      std::string out(static_cast<const char*>(buffer_.data().data()), buffer_.size());
      buffer_.consume(buffer_.size());
      return out;
    }
    char chunk[4096];
    size_t n = 0;
    run([&](auto done) { socket_.async_read_some(boost::asio::buffer(chunk), done); }, &n);
    return std::string(chunk, n);
  }

  // Starts an async operation and runs it to completion or the timeout.
  template <typename Start>
  void run(Start start, size_t* transferred = nullptr) {
    bool finished = false;
    boost::system::error_code result;
    start([&](boost::system::error_code ec, size_t n) {
      result = ec;
      finished = true;
      if (transferred) *transferred = n;
    });
    io_.restart();
    io_.run_for(timeout_);
    if (!finished) {
      close();
      io_.restart();
      io_.run();
      throw std::runtime_error("HTTP test client: no answer within the timeout");
    }
    if (result) throw boost::system::system_error(result);
  }

  std::string host_;
  uint16_t port_;
  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  boost::beast::flat_buffer buffer_;
  std::chrono::milliseconds timeout_;
};

// The payloads of an SSE body's `data:` events, in order ("[DONE]" included).
inline std::vector<std::string> sse_data_events(std::string_view body) {
  std::vector<std::string> events;
  size_t pos = 0;
  while (pos < body.size()) {
    const size_t end = body.find("\n\n", pos);
    const std::string_view event =
        body.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos);
    constexpr std::string_view kData = "data: ";
    if (event.substr(0, kData.size()) == kData) events.emplace_back(event.substr(kData.size()));
    if (end == std::string_view::npos) break;
    pos = end + 2;
  }
  return events;
}

}  // namespace loom::test
