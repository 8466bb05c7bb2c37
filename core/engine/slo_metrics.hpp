// Server-side goodput: per priority class, how many requests met or missed their TTFT and TPOT
// targets and how long they queued; requests refused (by reason), aborted and failed; and the
// rate of requests that met every target over a sliding window (goodput, as DistServe defines it:
// served requests that met their SLO, per second). A request without a target meets it.
// Thread-safe: the engine thread and HTTP threads (refusals) write, /metrics reads.
#pragma once

#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>

#include "core/engine/slo_snapshot.hpp"

namespace loom {

class SloMetrics {
 public:
  explicit SloMetrics(int32_t goodput_window_s = 60) : window_s_(goodput_window_s) {}

  void on_queue_wait(int32_t priority, int64_t wait_us);
  // Returns whether the TTFT target (ms, 0 = none) was met; counted only when there is one.
  bool on_first_token(int32_t priority, int64_t ttft_us, int32_t target_ms);
  // A normal finish (stop or length). tpot_us < 0: fewer than two tokens, no TPOT to judge.
  void on_success(int32_t priority, bool ttft_met, int64_t tpot_us, int32_t tpot_target_ms, int64_t now_us);
  void on_aborted();
  void on_failed();
  void on_rejected(const std::string& reason);

  SloSnapshot snapshot(int64_t now_us) const;

 private:
  void prune(int64_t now_us) const;

  int32_t window_s_;
  mutable std::mutex mutex_;
  std::map<int32_t, SloClassCounts> classes_;
  std::map<std::string, int64_t> rejected_;
  int64_t aborted_ = 0;
  int64_t failed_ = 0;
  mutable std::deque<int64_t> good_finishes_us_;  // finish times of requests that met every target
};

}  // namespace loom
