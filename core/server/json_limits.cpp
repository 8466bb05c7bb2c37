#include "core/server/json_limits.hpp"

#include "core/server/api_error.hpp"

namespace loom {

void check_json_limits(std::string_view text, const JsonLimits& limits, const std::string& what) {
  int64_t depth = 0;
  int64_t elements = 0;
  bool in_string = false;
  for (size_t i = 0; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') ++i;  // the escaped character cannot end the string
      else if (c == '"') in_string = false;
      continue;
    }
    switch (c) {
      case '"':
        in_string = true;
        break;
      case '[':
      case '{':
        if (++depth > limits.max_depth) {
          throw ApiError(400, what + " nests arrays/objects deeper than the server's limit of " +
                                  std::to_string(limits.max_depth) + " (server.max_json_depth)",
                         std::nullopt, "invalid_request_error", "json_too_deep");
        }
        ++elements;  // the container's first element (or nothing, for an empty one: close enough)
        break;
      case ']':
      case '}':
        --depth;
        break;
      case ',':
        ++elements;
        break;
      default:
        continue;
    }
    if (elements > limits.max_elements) {
      throw ApiError(400, what + " has more than the server's limit of " + std::to_string(limits.max_elements) +
                              " array elements and object members (server.max_json_elements)",
                     std::nullopt, "invalid_request_error", "json_too_large");
    }
  }
}

}  // namespace loom
