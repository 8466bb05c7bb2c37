#include "core/server/http_router.hpp"

#include <algorithm>

#include "core/common/logging.hpp"

namespace loom {

namespace http = boost::beast::http;

HttpRouter::HttpRouter(ErrorFormatter error_formatter)
    : error_formatter_(std::move(error_formatter)) {}

void HttpRouter::add(http::verb method, std::string path, RouteHandler handler) {
  routes_[std::move(path)][method] = std::move(handler);
}

void HttpRouter::add_prefix(http::verb method, std::string prefix, RouteHandler handler) {
  prefixes_[std::move(prefix)][method] = std::move(handler);
}

HttpReply HttpRouter::error(unsigned status, const std::string& message) const {
  return error_formatter_(status, message);
}

void HttpRouter::dispatch(HttpRequest& request, const std::shared_ptr<HttpExchange>& exchange) const {
  if (filter_ && filter_(request, *exchange)) return;
  const std::string_view target(request.target().data(), request.target().size());
  const std::string_view path = target.substr(0, target.find('?'));
  auto route = routes_.find(path);
  if (route == routes_.end()) {
    route = std::find_if(prefixes_.begin(), prefixes_.end(),
                         [&](const auto& p) { return path.size() > p.first.size() && path.starts_with(p.first); });
    if (route == prefixes_.end()) route = routes_.end();
  }
  if (route == routes_.end()) {
    exchange->reply(error(404, "no route for " + std::string(path)));
    return;
  }
  const auto handler = route->second.find(request.method());
  if (handler == route->second.end()) {
    std::string allow;
    for (const auto& [method, _] : route->second) {
      allow += (allow.empty() ? "" : ", ") + std::string(http::to_string(method));
    }
    HttpReply reply =
        error(405, "method " + std::string(request.method_string()) + " is not allowed on " +
                       std::string(path) + " (allowed: " + allow + ")");
    reply.headers.emplace_back("Allow", allow);
    exchange->reply(std::move(reply));
    return;
  }
  const std::string method(request.method_string()), where(path);  // the handler may move the request
  try {
    handler->second(request, exchange);
  } catch (const std::exception& e) {
    // Handlers report request problems themselves; anything escaping is a bug on our side.
    LOOM_LOG_ERROR("handler for {} {} failed: {}", method, where, e.what());
    exchange->reply(error(500, std::string("internal error: ") + e.what()));
  }
}

}  // namespace loom
