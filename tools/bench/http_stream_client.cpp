#include "tools/bench/http_stream_client.hpp"

#include <array>
#include <utility>  // std::exchange, which Asio 1.74's awaitable.hpp uses unincluded
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <limits>

#include "core/common/error.hpp"
#include "tools/bench/stream_recorder.hpp"

namespace loom::bench {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

http::request<http::string_body> make_request(const ServerTarget& target, http::verb verb,
                                              const std::string& path, std::string body) {
  http::request<http::string_body> req{verb, target.base_path + path, 11};
  req.set(http::field::host, target.host);
  req.set(http::field::user_agent, "loom-bench");
  if (!target.api_key.empty()) req.set(http::field::authorization, "Bearer " + target.api_key);
  if (verb == http::verb::post) {
    req.set(http::field::content_type, "application/json");
    req.set(http::field::accept, "text/event-stream");
    req.body() = std::move(body);
  }
  req.prepare_payload();
  return req;
}

}  // namespace

ServerTarget parse_base_url(const std::string& url) {
  static const std::string kScheme = "http://";
  if (url.rfind(kScheme, 0) != 0) {
    throw Error("--base-url must start with http:// (https is not supported), got '" + url + "'");
  }
  ServerTarget t;
  std::string rest = url.substr(kScheme.size());
  const size_t slash = rest.find('/');
  if (slash != std::string::npos) {
    t.base_path = rest.substr(slash);
    rest.resize(slash);
    while (!t.base_path.empty() && t.base_path.back() == '/') t.base_path.pop_back();
  }
  const size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']', colon) == std::string::npos) {
    t.host = rest.substr(0, colon);
    t.port = rest.substr(colon + 1);
  } else {
    t.host = rest;
    t.port = "80";
  }
  if (t.host.empty() || t.port.empty() ||
      t.port.find_first_not_of("0123456789") != std::string::npos) {
    throw Error("--base-url: cannot read host and port from '" + url + "'");
  }
  return t;
}

net::awaitable<void> stream_request(const ServerTarget& target, std::string path, std::string body,
                                    RequestRecord& record, BenchClock::time_point origin) {
  const auto now = [origin] {
    return std::chrono::duration<double>(BenchClock::now() - origin).count();
  };
  StreamRecorder recorder(record);
  record.start = now();
  const auto executor = co_await net::this_coro::executor;
  beast::error_code ec;
  // A fresh token per operation: Asio 1.74 cannot initiate from a const or reused one.
  const auto token = [&ec] { return net::redirect_error(net::use_awaitable, ec); };

  tcp::resolver resolver(executor);
  const auto endpoints = co_await resolver.async_resolve(target.host, target.port, token());
  if (ec) co_return recorder.on_failure("resolve " + target.host + ": " + ec.message(), now());
  beast::tcp_stream stream(executor);
  stream.expires_after(target.timeout);
  co_await stream.async_connect(endpoints, token());
  if (ec) co_return recorder.on_failure("connect: " + ec.message(), now());

  auto req = make_request(target, http::verb::post, path, std::move(body));
  stream.expires_after(target.timeout);
  co_await http::async_write(stream, req, token());
  if (ec) co_return recorder.on_failure("send: " + ec.message(), now());

  beast::flat_buffer buffer;
  http::response_parser<http::buffer_body> parser;
  parser.body_limit(std::numeric_limits<std::uint64_t>::max());
  stream.expires_after(target.timeout);
  co_await http::async_read_header(stream, buffer, parser, token());
  if (ec) co_return recorder.on_failure("read response header: " + ec.message(), now());
  const unsigned status = parser.get().result_int();

  std::array<char, 16384> piece{};
  std::string error_body;  // a non-200 response's body, for the error message
  while (!parser.is_done()) {
    parser.get().body().data = piece.data();
    parser.get().body().size = piece.size();
    stream.expires_after(target.timeout);
    // read_some, not read: read only returns once the 16 KiB piece is full, which would deliver
    // a stream's chunks in bursts and push every timestamp late.
    co_await http::async_read_some(stream, buffer, parser, token());
    if (ec == http::error::need_buffer) ec = {};
    const size_t got = piece.size() - parser.get().body().size;
    if (got > 0) {
      if (status == 200) {
        recorder.on_bytes(std::string_view(piece.data(), got), now());
      } else if (error_body.size() < 4096) {
        error_body.append(piece.data(), got);
      }
    }
    if (ec) co_return recorder.on_failure("read response body: " + ec.message(), now());
  }
  if (status != 200) {
    co_return recorder.on_failure("HTTP " + std::to_string(status) + ": " + error_body.substr(0, 300),
                                  now());
  }
  recorder.on_end(now());
  stream.socket().shutdown(tcp::socket::shutdown_both, ec);
}

std::string http_get(const ServerTarget& target, const std::string& path) {
  const std::string url = "http://" + target.host + ":" + target.port + target.base_path + path;
  try {
    net::io_context io;
    tcp::resolver resolver(io);
    beast::tcp_stream stream(io);
    stream.expires_after(std::chrono::seconds(30));
    stream.connect(resolver.resolve(target.host, target.port));
    http::write(stream, make_request(target, http::verb::get, path, {}));
    beast::flat_buffer buffer;
    http::response<http::string_body> res;
    http::read(stream, buffer, res);
    beast::error_code ignored;
    stream.socket().shutdown(tcp::socket::shutdown_both, ignored);
    if (res.result_int() != 200) {
      throw Error("GET " + url + ": HTTP " + std::to_string(res.result_int()) + ": " +
                  res.body().substr(0, 300));
    }
    return res.body();
  } catch (const beast::system_error& e) {
    throw Error("GET " + url + ": " + e.code().message());
  }
}

}  // namespace loom::bench
