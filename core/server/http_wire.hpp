// The bytes of HTTP/1.x responses: a status line with header fields, chunked-transfer framing.
// The session writes these strings as they are, so a stream is just more strings in the queue.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace loom {

struct ResponseHead {
  unsigned status = 200;
  unsigned version = 11;  // 10 or 11, as the request's
  bool keep_alive = true;
  std::string content_type;
  std::optional<size_t> content_length;  // unset: chunked on HTTP/1.1, close-delimited on 1.0
  std::vector<std::pair<std::string, std::string>> headers;
};

std::string serialize_head(const ResponseHead& head);

// One chunk of a chunked body ("<hex size>\r\n<data>\r\n"); empty data gives "".
std::string chunk_frame(std::string_view data);
inline constexpr std::string_view kLastChunk = "0\r\n\r\n";

}  // namespace loom
