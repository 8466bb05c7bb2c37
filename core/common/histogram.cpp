#include "core/common/histogram.hpp"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/common/error.hpp"

namespace loom {

Histogram::Histogram(std::vector<double> upper_bounds)
    : bounds_(std::move(upper_bounds)), counts_(bounds_.size() + 1, 0) {
  for (size_t i = 0; i < bounds_.size(); ++i) {
    LOOM_CHECK(std::isfinite(bounds_[i]), "histogram bound " + std::to_string(i) + " is not finite");
    LOOM_CHECK(i == 0 || bounds_[i - 1] < bounds_[i],
               "histogram bounds must be strictly increasing at index " + std::to_string(i));
  }
}

void Histogram::observe(double v) {
  if (std::isnan(v)) return;  // belongs in no bucket and would poison the sum
  const size_t bucket =
      static_cast<size_t>(std::lower_bound(bounds_.begin(), bounds_.end(), v) - bounds_.begin());
  std::lock_guard<std::mutex> lock(mutex_);
  ++counts_[bucket];
  sum_ += v;
  ++count_;
}

HistogramSnapshot Histogram::snapshot() const {
  HistogramSnapshot s;
  s.upper_bounds = bounds_;
  s.cumulative.resize(bounds_.size());
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t running = 0;
  for (size_t i = 0; i < bounds_.size(); ++i) {
    running += counts_[i];
    s.cumulative[i] = running;
  }
  s.sum = sum_;
  s.count = count_;
  return s;
}

}  // namespace loom
