// The shape limits of request JSON ([server] max_json_depth, max_json_elements), checked on the
// raw text by a flat scan before any parser or template sees it: recursive consumers (the Jinja
// engine converting `tools` or `chat_template_kwargs`, schema compilers) then never meet a
// nesting deeper than the limit, and a body of a million tiny values is refused before it is
// built into a DOM many times its size.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace loom {

struct JsonLimits {
  int32_t max_depth = 64;
  int64_t max_elements = 262144;  // array elements + object members
};

// Throws a 400 ApiError (code "json_too_deep" / "json_too_large") naming `what` ("request body",
// or the field a JSON text came in) when `text` nests deeper or holds more elements than allowed.
// Text that is not JSON passes: the parser reports it.
void check_json_limits(std::string_view text, const JsonLimits& limits, const std::string& what);

}  // namespace loom
