#include "core/engine/slo_metrics.hpp"

namespace loom {

void SloMetrics::on_queue_wait(int32_t priority, int64_t wait_us) {
  std::lock_guard<std::mutex> lock(mutex_);
  SloClassCounts& c = classes_[priority];
  c.priority = priority;
  c.queue_wait_seconds_sum += static_cast<double>(wait_us) / 1e6;
  ++c.queue_wait_count;
}

bool SloMetrics::on_first_token(int32_t priority, int64_t ttft_us, int32_t target_ms) {
  if (target_ms <= 0) return true;
  const bool met = ttft_us <= static_cast<int64_t>(target_ms) * 1000;
  std::lock_guard<std::mutex> lock(mutex_);
  SloClassCounts& c = classes_[priority];
  c.priority = priority;
  ++(met ? c.ttft_met : c.ttft_missed);
  return met;
}

void SloMetrics::on_success(int32_t priority, bool ttft_met, int64_t tpot_us, int32_t tpot_target_ms, int64_t now_us) {
  bool good = ttft_met;
  std::lock_guard<std::mutex> lock(mutex_);
  if (tpot_target_ms > 0 && tpot_us >= 0) {
    const bool met = tpot_us <= static_cast<int64_t>(tpot_target_ms) * 1000;
    SloClassCounts& c = classes_[priority];
    c.priority = priority;
    ++(met ? c.tpot_met : c.tpot_missed);
    good = good && met;
  }
  if (!good) return;
  good_finishes_us_.push_back(now_us);
  prune(now_us);
}

void SloMetrics::on_aborted() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++aborted_;
}

void SloMetrics::on_failed() {
  std::lock_guard<std::mutex> lock(mutex_);
  ++failed_;
}

void SloMetrics::on_rejected(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mutex_);
  ++rejected_[reason];
}

void SloMetrics::prune(int64_t now_us) const {
  const int64_t oldest = now_us - static_cast<int64_t>(window_s_) * 1'000'000;
  while (!good_finishes_us_.empty() && good_finishes_us_.front() < oldest) good_finishes_us_.pop_front();
}

SloSnapshot SloMetrics::snapshot(int64_t now_us) const {
  std::lock_guard<std::mutex> lock(mutex_);
  prune(now_us);
  SloSnapshot s;
  for (const auto& [priority, counts] : classes_) s.classes.push_back(counts);
  for (const auto& [reason, n] : rejected_) s.rejected.emplace_back(reason, n);
  s.aborted = aborted_;
  s.failed = failed_;
  s.goodput_window_s = window_s_;
  s.goodput = window_s_ > 0 ? static_cast<double>(good_finishes_us_.size()) / window_s_ : 0.0;
  return s;
}

}  // namespace loom
