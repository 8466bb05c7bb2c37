// The one error type of the HTTP edge: an HTTP status plus the OpenAI error fields. Route code
// throws it; the routes turn it into `{"error": {...}}` and the server keeps serving.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>

namespace loom {

struct ApiError : std::runtime_error {
  ApiError(unsigned status, std::string message, std::optional<std::string> param = std::nullopt,
           std::string type = "invalid_request_error",
           std::optional<std::string> code = std::nullopt)
      : std::runtime_error(std::move(message)),
        status(status),
        type(std::move(type)),
        param(std::move(param)),
        code(std::move(code)) {}

  unsigned status;                   // 400, 401, 404, 413, 500, ...
  std::string type;                  // OpenAI's error type, e.g. "invalid_request_error"
  std::optional<std::string> param;  // the request field at fault, when one is
  std::optional<std::string> code;   // e.g. "model_not_found"; null otherwise
  int32_t retry_after_s = 0;         // > 0: sent as Retry-After (a 429 from admission control)
};

// A 400 about one request field.
inline ApiError bad_field(const std::string& param, const std::string& message) {
  return ApiError(400, message, param);
}

}  // namespace loom
