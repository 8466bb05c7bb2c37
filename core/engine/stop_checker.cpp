#include "core/engine/stop_checker.hpp"

#include <algorithm>

namespace loom {

StopChecker::StopChecker(std::vector<std::string> stops, bool include_stop)
    : stops_(std::move(stops)), include_stop_(include_stop) {
  std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

StopChecker::Result StopChecker::push(std::string_view text) {
  Result result;
  held_.append(text);
  if (stops_.empty()) {
    result.text.swap(held_);
    return result;
  }
  // Earliest match wins: the text before it is everything the client may see.
  size_t best = std::string::npos, best_len = 0;
  for (const auto& stop : stops_) {
    const size_t at = held_.find(stop);
    if (at < best) best = at, best_len = stop.size();
  }
  if (best != std::string::npos) {
    result.text = held_.substr(0, include_stop_ ? best + best_len : best);
    result.stopped = true;
    held_.clear();
    return result;
  }
  const size_t keep = partial_match_length();
  result.text = held_.substr(0, held_.size() - keep);
  held_.erase(0, held_.size() - keep);
  return result;
}

std::string StopChecker::flush() {
  std::string out;
  out.swap(held_);
  return out;
}

size_t StopChecker::partial_match_length() const {
  size_t best = 0;
  for (const auto& stop : stops_) {
    const size_t max_len = std::min(stop.size() - 1, held_.size());
    for (size_t len = max_len; len > best; --len) {
      if (std::string_view(held_).substr(held_.size() - len) == std::string_view(stop).substr(0, len)) {
        best = len;
        break;
      }
    }
  }
  return best;
}

}  // namespace loom
