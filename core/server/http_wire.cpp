#include "core/server/http_wire.hpp"

#include <boost/beast/http/status.hpp>
#include <cstdio>
#include <ostream>  // boost 1.74 status.hpp needs it and does not include it

namespace loom {

std::string serialize_head(const ResponseHead& head) {
  namespace http = boost::beast::http;
  const auto reason = http::obsolete_reason(http::int_to_status(head.status));
  std::string out = head.version == 10 ? "HTTP/1.0 " : "HTTP/1.1 ";
  out += std::to_string(head.status) + " ";
  out.append(reason.data(), reason.size());
  out += "\r\nServer: loom\r\n";
  if (!head.content_type.empty()) out += "Content-Type: " + head.content_type + "\r\n";
  if (head.content_length) {
    out += "Content-Length: " + std::to_string(*head.content_length) + "\r\n";
  } else if (head.version == 11) {
    out += "Transfer-Encoding: chunked\r\n";
  }
  for (const auto& [name, value] : head.headers) out += name + ": " + value + "\r\n";
  out += head.keep_alive ? "Connection: keep-alive\r\n" : "Connection: close\r\n";
  out += "\r\n";
  return out;
}

std::string chunk_frame(std::string_view data) {
  if (data.empty()) return {};  // a zero-size chunk would end the body
  char size[24];
  std::snprintf(size, sizeof(size), "%zx\r\n", data.size());
  std::string out = size;
  out.append(data);
  out += "\r\n";
  return out;
}

}  // namespace loom
