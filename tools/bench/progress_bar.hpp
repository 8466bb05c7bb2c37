// A one-line progress bar on stderr, redrawn in place as requests finish.
#pragma once

#include <cstddef>

#include "tools/bench/http_stream_client.hpp"

namespace loom::bench {

class ProgressBar {
 public:
  ProgressBar(size_t total, bool enabled);
  void finished(bool success);  // one more request done
  void close();                 // ends the line

 private:
  void draw() const;

  size_t total_;
  bool enabled_;
  size_t done_ = 0;
  size_t failed_ = 0;
  BenchClock::time_point start_ = BenchClock::now();
};

}  // namespace loom::bench
