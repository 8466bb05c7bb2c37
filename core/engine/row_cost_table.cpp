#include "core/engine/row_cost_table.hpp"

#include <algorithm>

namespace loom {

void RowCostTable::observe(int32_t rows, int64_t wall_us) {
  if (rows < 1 || rows > kMaxRows || wall_us < 0) return;
  if (mean_us_.empty()) mean_us_.assign(static_cast<size_t>(kMaxRows) + 1, 0.0);
  const auto t = static_cast<double>(wall_us);
  const auto at = std::lower_bound(measured_.begin(), measured_.end(), rows);
  double& mean = mean_us_[static_cast<size_t>(rows)];
  if (at == measured_.end() || *at != rows) {
    measured_.insert(at, rows);
    mean = t;
  } else {
    mean += kWeight * (t - mean);
  }
  ++samples_;
}

bool RowCostTable::measured(int32_t rows) const {
  return std::binary_search(measured_.begin(), measured_.end(), rows);
}

std::optional<double> RowCostTable::predict_us(int32_t rows, double per_extra_row_us) const {
  if (measured_.empty() || rows < 1) return std::nullopt;
  // hi: the first measured count >= rows; lo: the one before it.
  const auto hi = std::lower_bound(measured_.begin(), measured_.end(), rows);
  // Per row outside the measured counts: the caller's price, or the slope at that end of the
  // table where it is steeper (past the bend, where rows are compute-bound).
  const auto slope = [&](size_t a, size_t b) {
    const int32_t ra = measured_[a], rb = measured_[b];
    return (mean_us_[static_cast<size_t>(rb)] - mean_us_[static_cast<size_t>(ra)]) / static_cast<double>(rb - ra);
  };
  const size_t n = measured_.size();
  const double price = std::max(0.0, per_extra_row_us);
  const double per_row_below = n >= 2 ? std::max(price, slope(0, 1)) : price;
  const double per_row_above = n >= 2 ? std::max(price, slope(n - 2, n - 1)) : price;
  if (hi == measured_.begin()) {
    // Below the smallest measured count m: m's time less the per-row price of each row fewer,
    // but never under m's time scaled down in proportion (a step with no fixed cost).
    const int32_t m = *hi;
    const double m_us = mean_us_[static_cast<size_t>(m)];
    if (m == rows) return m_us;
    return std::max(m_us - per_row_below * (m - rows), m_us * rows / m);
  }
  const int32_t lo = *(hi - 1);
  // Never below a smaller measured count's time: noisy means must not make rows look free.
  double floor_us = 0.0;
  for (auto it = measured_.begin(); it != hi; ++it) floor_us = std::max(floor_us, mean_us_[static_cast<size_t>(*it)]);
  const double lo_us = mean_us_[static_cast<size_t>(lo)];
  if (hi == measured_.end()) return std::max(floor_us, lo_us + per_row_above * (rows - lo));
  const double hi_us = mean_us_[static_cast<size_t>(*hi)];
  if (*hi == rows) return std::max(floor_us, hi_us);
  return std::max(floor_us, lo_us + (hi_us - lo_us) * static_cast<double>(rows - lo) / static_cast<double>(*hi - lo));
}

}  // namespace loom
