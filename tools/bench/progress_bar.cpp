#include "tools/bench/progress_bar.hpp"

#include <cstdio>
#include <string>

namespace loom::bench {

ProgressBar::ProgressBar(size_t total, bool enabled) : total_(total), enabled_(enabled) {
  if (enabled_) draw();
}

void ProgressBar::finished(bool success) {
  ++done_;
  if (!success) ++failed_;
  if (enabled_) draw();
}

void ProgressBar::close() {
  if (enabled_) std::fputc('\n', stderr);
  enabled_ = false;
}

void ProgressBar::draw() const {
  constexpr size_t kWidth = 40;
  const size_t filled = total_ == 0 ? kWidth : done_ * kWidth / total_;
  const double elapsed = std::chrono::duration<double>(BenchClock::now() - start_).count();
  std::fprintf(stderr, "\r[%s%s] %zu/%zu requests, %zu failed, %.1f s",
               std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(), done_,
               total_, failed_, elapsed);
  std::fflush(stderr);
}

}  // namespace loom::bench
