// An incremental parser of a server-sent-events byte stream (the WHATWG "event stream" format):
// bytes arrive in arbitrary pieces (a line, an event or a CRLF may be split anywhere) and every
// complete event comes out as soon as its closing blank line has arrived. Pure: no I/O, no clock,
// so a test can feed a scripted stream split at awkward points.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom::bench {

struct SseEvent {
  std::string event;  // the "event:" field; empty means the default type "message"
  std::string data;   // the "data:" lines joined with '\n'
};

class SseParser {
 public:
  // Consumes the next piece of the stream; returns the events it completed, in order.
  std::vector<SseEvent> feed(std::string_view bytes);

 private:
  void on_line(std::string_view line, std::vector<SseEvent>& out);

  std::string line_;        // the current line, without its terminator
  bool after_cr_ = false;   // the previous byte was CR: a following LF belongs to it
  bool at_start_ = true;    // a UTF-8 BOM may open the stream
  std::string event_;
  std::string data_;
  bool has_data_ = false;
};

}  // namespace loom::bench
