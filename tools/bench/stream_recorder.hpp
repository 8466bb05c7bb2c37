// Turns the bytes of one streaming response, each piece stamped with its arrival time, into the
// request's RequestRecord: token-chunk times, usage, generated text, success or the first error.
// Pure (the caller supplies the times), so a test can replay a scripted stream exactly.
#pragma once

#include <string_view>

#include "tools/bench/request_record.hpp"
#include "tools/bench/sse_parser.hpp"

namespace loom::bench {

class StreamRecorder {
 public:
  explicit StreamRecorder(RequestRecord& record) : record_(record) {}

  // The next piece of the response body, read at time t.
  void on_bytes(std::string_view bytes, double t);
  // The body ended (cleanly or not) at time t: success needs [DONE] and no error event.
  void on_end(double t);
  // The request failed before or outside the stream (connect error, HTTP status, ...).
  void on_failure(std::string error, double t);

  bool saw_error() const { return !record_.error.empty(); }

 private:
  RequestRecord& record_;
  SseParser parser_;
  bool done_ = false;
};

}  // namespace loom::bench
