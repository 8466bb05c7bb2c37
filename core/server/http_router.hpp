// Method + path -> handler. An unknown path is a 404, a known path with another method a 405
// (with Allow); a handler that throws becomes a 500. Error bodies come from the formatter the
// owner gives, so the transport knows nothing of the API's error format.
#pragma once

#include <boost/beast/http/verb.hpp>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "core/server/http_exchange.hpp"

namespace loom {

// The handler may move from the request (e.g. to hand its body to another thread).
using RouteHandler = std::function<void(HttpRequest&, std::shared_ptr<HttpExchange>)>;
// Runs before routing; returns true when it answered the request itself (e.g. a CORS preflight).
using RequestFilter = std::function<bool(const HttpRequest&, HttpExchange&)>;
using ErrorFormatter = std::function<HttpReply(unsigned status, const std::string& message)>;

class HttpRouter {
 public:
  explicit HttpRouter(ErrorFormatter error_formatter);

  // Paths match exactly, ignoring a query string.
  void add(boost::beast::http::verb method, std::string path, RouteHandler handler);

  // Paths that start with `prefix` and match no exact route (e.g. "/v1/models/" for
  // /v1/models/{id}); the handler reads the rest of the path itself.
  void add_prefix(boost::beast::http::verb method, std::string prefix, RouteHandler handler);

  void set_filter(RequestFilter filter) { filter_ = std::move(filter); }

  // Runs on the connection's strand.
  void dispatch(HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) const;

  HttpReply error(unsigned status, const std::string& message) const;

 private:
  ErrorFormatter error_formatter_;
  RequestFilter filter_;
  std::map<std::string, std::map<boost::beast::http::verb, RouteHandler>, std::less<>> routes_;
  std::map<std::string, std::map<boost::beast::http::verb, RouteHandler>, std::less<>> prefixes_;
};

}  // namespace loom
