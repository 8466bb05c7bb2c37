// A Prometheus-style histogram with fixed bucket boundaries: per-bucket counts, sum and count.
// observe() and snapshot() may run on any threads at once; each takes one short lock, so the
// engine thread records without waiting on a reader for longer than a copy of a few counters.
#pragma once

#include <cstdint>
#include <mutex>
#include <vector>

namespace loom {

// What a reader sees: cumulative counts as the exposition format wants them.
struct HistogramSnapshot {
  std::vector<double> upper_bounds;  // strictly increasing, finite; the +Inf bucket is implicit
  std::vector<uint64_t> cumulative;  // [upper_bounds.size()]: observations <= upper_bounds[i]
  double sum = 0.0;
  uint64_t count = 0;                // observations in all, i.e. the +Inf bucket
};

class Histogram {
 public:
  // Throws loom::Error when the bounds are not strictly increasing and finite.
  explicit Histogram(std::vector<double> upper_bounds);

  // Counts v in the first bucket whose upper bound is >= v (Prometheus' `le` is inclusive).
  void observe(double v);
  HistogramSnapshot snapshot() const;
  const std::vector<double>& upper_bounds() const { return bounds_; }

 private:
  const std::vector<double> bounds_;
  mutable std::mutex mutex_;
  std::vector<uint64_t> counts_;  // [bounds_.size() + 1]: per bucket, the last one +Inf
  double sum_ = 0.0;
  uint64_t count_ = 0;
};

}  // namespace loom
