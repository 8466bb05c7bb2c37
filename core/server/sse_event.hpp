// Server-sent events framing as OpenAI streams use it: one `data:` line per event (JSON is
// single-line, so no splitting is needed) and the literal [DONE] sentinel at the end.
#pragma once

#include <string>
#include <string_view>

namespace loom {

inline constexpr const char* kSseContentType = "text/event-stream";
inline constexpr std::string_view kSseDone = "data: [DONE]\n\n";

inline std::string sse_event(std::string_view data) {
  std::string out = "data: ";
  out.append(data);
  out += "\n\n";
  return out;
}

}  // namespace loom
