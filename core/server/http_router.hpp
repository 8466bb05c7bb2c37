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

using RouteHandler = std::function<void(const HttpRequest&, std::shared_ptr<HttpExchange>)>;
using ErrorFormatter = std::function<HttpReply(unsigned status, const std::string& message)>;

class HttpRouter {
 public:
  explicit HttpRouter(ErrorFormatter error_formatter);

  // Paths match exactly, ignoring a query string.
  void add(boost::beast::http::verb method, std::string path, RouteHandler handler);

  // Paths that start with `prefix` and match no exact route (e.g. "/v1/models/" for
  // /v1/models/{id}); the handler reads the rest of the path itself.
  void add_prefix(boost::beast::http::verb method, std::string prefix, RouteHandler handler);

  // Runs on the connection's strand.
  void dispatch(const HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) const;

  HttpReply error(unsigned status, const std::string& message) const;

 private:
  ErrorFormatter error_formatter_;
  std::map<std::string, std::map<boost::beast::http::verb, RouteHandler>, std::less<>> routes_;
  std::map<std::string, std::map<boost::beast::http::verb, RouteHandler>, std::less<>> prefixes_;
};

}  // namespace loom
