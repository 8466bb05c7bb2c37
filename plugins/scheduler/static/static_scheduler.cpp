// scheduler/static: static batching, the baseline the benchmarks compare continuous batching
// against. A batch of up to max_num_seqs requests is formed only when no batch is in flight, and
// no request joins until every member of the batch has finished, so short requests wait for the
// longest one. The design note is at the top of schedule().
#include <algorithm>
#include <deque>
#include <string>
#include <unordered_set>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "common/scheduler_support.hpp"

namespace {

using loom::sdk::Error;
using loom_sched::CacheClient;

using Config = loom_sched::BatchLimits;

const loom::sdk::ConfigSpec<Config>& config_keys() {
  static const auto spec = loom_sched::batch_limits<Config>("scheduler static");
  return spec;
}

class StaticScheduler {
 public:
  StaticScheduler(const loom::sdk::Host&, std::string_view config) : cfg_(config_keys().parse(config)) {}

  static const loom::sdk::ConfigSpec<Config>& config_spec() { return config_keys(); }

  void add_request(const loom_request_view* r) {
    if (r == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is null");
    const uint64_t id = r->request_id;
    if (contains(waiting_, id) || contains(batch_, id))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler static: request " + std::to_string(id) + " added twice");
    waiting_.push_back(id);
  }

  void remove_request(uint64_t id) {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
    batch_.erase(std::remove(batch_.begin(), batch_.end(), id), batch_.end());
    allocated_.erase(std::remove(allocated_.begin(), allocated_.end(), id), allocated_.end());
  }

  void schedule(const loom_sched_context* c, loom_sched_output* o) {
    // Design note.
    // 1. When the batch is empty (every member finished), the next one is formed from the first
    //    max_num_seqs waiting requests in arrival order; those that can never fit the pool are
    //    rejected instead. Nobody else joins until the batch is empty again.
    // 2. Each step, within max_num_batched_tokens, first the members holding blocks, in batch
    //    order, advance min(gap, budget left) tokens: the whole prompt, chunked only by the
    //    budget, then one decode token per step. Then members without blocks (not started yet, or
    //    preempted) are allocated when the cache can hold their first chunk now; the others wait
    //    for a later step of the same batch.
    // 3. When an append runs out of blocks, the most recently allocated member not scheduled this
    //    step is preempted (the host swaps or frees its blocks at once): it stays in the batch and
    //    comes back once there is room. If that is the member itself, the step stops there. So the first member holding
    //    blocks at the start of a step always advances (alone it fits: fits() said so) and the
    //    batch drains. No member is allocated in a step that preempted: the pool is full.
    loom::sdk::SchedStep step(c, o, "scheduler static");
    CacheClient& cache = step.cache();
    if (batch_.empty()) form_batch(step);

    int32_t budget = cfg_.max_num_batched_tokens;
    bool preempted_any = false;
    std::unordered_set<uint64_t> scheduled;
    for (size_t i = 0; i < batch_.size() && budget > 0; ++i) {
      const uint64_t id = batch_[i];
      if (!contains(allocated_, id)) continue;
      const loom_request_view req = step.request(id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) continue;
      const int32_t n = std::min(gap, budget);
      bool self_preempted = false;
      while (!cache.append(req, n)) {
        const uint64_t victim = pick_victim(scheduled);
        preempt(step, victim);
        preempted_any = true;
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) return;
      step.schedule(id, n, 0);
      scheduled.insert(id);
      budget -= n;
    }
    for (size_t i = 0; i < batch_.size() && budget > 0 && !preempted_any; ++i) {
      const uint64_t id = batch_[i];
      if (contains(allocated_, id)) continue;
      const loom_request_view req = step.request(id);
      int32_t n = 0;
      int32_t cached = 0;
      if (!loom_sched::admit(cache, req, cache.match_prefix(req), budget, &n, &cached)) continue;
      allocated_.push_back(id);
      step.schedule(id, n, cached);
      budget -= n;
    }
  }

  void stats(loom_sched_stats* out) const {
    out->num_running = static_cast<int32_t>(allocated_.size());
    out->num_waiting = static_cast<int32_t>(waiting_.size() + batch_.size() - allocated_.size());
    out->num_preemptions = num_preemptions_;
  }

 private:
  template <class C>
  static bool contains(const C& c, uint64_t id) {
    return std::find(c.begin(), c.end(), id) != c.end();
  }

  void form_batch(loom::sdk::SchedStep& step) {
    while (!waiting_.empty() && static_cast<int32_t>(batch_.size()) < cfg_.max_num_seqs) {
      const uint64_t id = waiting_.front();
      waiting_.pop_front();
      const loom_request_view req = step.request(id);
      if (!step.reject_if_never_fits(req)) batch_.push_back(id);
    }
  }

  // The most recently allocated member not yet scheduled this step; the member being scheduled
  // is one, so there always is a candidate.
  uint64_t pick_victim(const std::unordered_set<uint64_t>& scheduled) const {
    for (size_t k = allocated_.size(); k-- > 0;) {
      if (scheduled.count(allocated_[k]) == 0) return allocated_[k];
    }
    throw Error(LOOM_ERR_INTERNAL, "scheduler static: no preemption candidate");
  }

  // The host carries the preemption out (swap, then free) before step.preempt returns.
  void preempt(loom::sdk::SchedStep& step, uint64_t id) {
    step.preempt(id);
    allocated_.erase(std::remove(allocated_.begin(), allocated_.end(), id), allocated_.end());
    ++num_preemptions_;
  }

  Config cfg_;
  std::deque<uint64_t> waiting_;    // arrival order, not yet in a batch
  std::vector<uint64_t> batch_;     // the batch in flight, in admission order
  std::vector<uint64_t> allocated_; // members holding blocks, in allocation order
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(StaticScheduler, "static", "0.1.0",
                      "static batching baseline: a new batch only when every request of the last has finished");
