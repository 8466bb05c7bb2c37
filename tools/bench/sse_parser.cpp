#include "tools/bench/sse_parser.hpp"

namespace loom::bench {

std::vector<SseEvent> SseParser::feed(std::string_view bytes) {
  std::vector<SseEvent> out;
  for (const char c : bytes) {
    if (at_start_) {
      // The BOM (EF BB BF) is three bytes; drop them one by one while they match.
      static constexpr std::string_view kBom = "\xEF\xBB\xBF";
      if (line_.size() < kBom.size() && c == kBom[line_.size()]) {
        line_ += c;
        if (line_.size() == kBom.size()) {
          line_.clear();
          at_start_ = false;
        }
        continue;
      }
      at_start_ = false;  // not a BOM: what was taken for one is ordinary text
    }
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the LF of a CRLF
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      on_line(line_, out);
      line_.clear();
    } else {
      line_ += c;
    }
  }
  return out;
}

void SseParser::on_line(std::string_view line, std::vector<SseEvent>& out) {
  if (line.empty()) {  // a blank line dispatches the event gathered so far
    if (has_data_) {
      if (!data_.empty() && data_.back() == '\n') data_.pop_back();
      out.push_back(SseEvent{std::move(event_), std::move(data_)});
    }
    event_.clear();
    data_.clear();
    has_data_ = false;
    return;
  }
  if (line.front() == ':') return;  // a comment (servers send them as keep-alives)
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value;
  if (colon != std::string_view::npos) {
    value = line.substr(colon + 1);
    if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  }
  if (field == "data") {
    data_.append(value);
    data_ += '\n';
    has_data_ = true;
  } else if (field == "event") {
    event_.assign(value);
  }
  // "id" and "retry" matter to reconnecting browsers only; unknown fields are ignored (spec).
}

}  // namespace loom::bench
