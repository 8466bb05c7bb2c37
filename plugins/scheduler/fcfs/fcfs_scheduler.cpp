// scheduler/fcfs: first come, first served, with a token budget and chunked prefill.
//
// Two queues: `waiting_` (FIFO by arrival; preempted requests go back to its front) and
// `running_` (in admission order, oldest first). The design note is at the top of schedule().
#include <algorithm>
#include <deque>
#include <string>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "common/scheduler_support.hpp"
#include "loom/sdk_cache_client.hpp"
#include "loom/sdk_scheduler.hpp"

namespace {

using loom::sdk::Error;

struct Config {
  int32_t max_num_seqs = 16;
  int32_t max_num_batched_tokens = 2048;
};

const loom::sdk::ConfigSpec<Config>& config_keys() {
  static const auto spec = loom_sched::batch_limits<Config>("scheduler fcfs");
  return spec;
}

using Cache = loom::sdk::CacheClient;

class FcfsScheduler {
 public:
  FcfsScheduler(const loom::sdk::Host&, std::string_view config) : cfg_(config_keys().parse(config)) {}

  static const loom::sdk::ConfigSpec<Config>& config_spec() { return config_keys(); }

  void add_request(const loom_request_view* r) {
    if (r == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is null");
    const loom_request_view& req = *r;
    if (contains(waiting_, req.request_id) || contains(running_, req.request_id))
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler fcfs: request " + std::to_string(req.request_id) + " added twice");
    waiting_.push_back(req.request_id);
  }

  void remove_request(uint64_t id) {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), id), waiting_.end());
    running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
  }

  void schedule(const loom_sched_context* c, loom_sched_output* o) {
    // Design note.
    // Tokens, not phases: every request has num_tokens and num_computed_tokens and a step closes
    // part of the gap, whether that is a prompt chunk or one decode token.
    // 1. Running requests first, oldest first: each gets min(gap, budget) tokens, appended through
    //    the cache. When the cache is out of blocks, the most recently admitted running request
    //    is preempted (the host swaps or frees its blocks at once, it goes back to the front of
    //    waiting) and the append is retried; a request that is itself the newest preempts itself.
    //    Preempted requests were never scheduled this step: scheduling walks from the oldest and
    //    preemption takes from the newest.
    // 2. Then waiting requests in arrival order, while there is a free sequence slot and token
    //    budget: one that can never fit the pool is rejected with the cache's reason; the first
    //    one that cannot be allocated now stops admission (strict FCFS: nobody overtakes it);
    //    otherwise it gets min(remaining prompt, budget) tokens, so a long prompt is chunked
    //    across steps. No admission in a step that preempted: the pool is full.
    loom::sdk::SchedStep st(c, o, "scheduler fcfs");
    Cache& cache = st.cache();
    int32_t budget = cfg_.max_num_batched_tokens;
    bool preempted_any = false;

    for (size_t i = 0; i < running_.size() && budget > 0;) {
      const uint64_t id = running_[i];
      const loom_request_view req = st.request(id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) {
        ++i;
        continue;
      }
      const int32_t n = std::min(gap, budget);
      bool self_preempted = false;
      while (!cache.append(req, n)) {
        const uint64_t victim = running_.back();
        preempt(st, victim);
        preempted_any = true;
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;  // it was the newest: nobody after it is left running
      st.schedule(id, n, 0);
      budget -= n;
      ++i;
    }

    while (!preempted_any && !waiting_.empty() && static_cast<int32_t>(running_.size()) < cfg_.max_num_seqs &&
           budget > 0) {
      const uint64_t id = waiting_.front();
      const loom_request_view req = st.request(id);
      if (st.reject_if_never_fits(req)) {
        waiting_.pop_front();
        continue;
      }
      // A prefix hit covers leading tokens; the cache must leave at least the last one to compute.
      const int32_t hit = cache.match_prefix(req);
      const int32_t room = std::min(req.num_tokens, hit + budget);
      if (!cache.can_allocate(req, room)) break;
      const int32_t cached = cache.allocate(req, room);
      const int32_t n = room - cached;
      if (n <= 0) {
        // The host frees what was allocated when the failed step ends the request.
        throw Error(LOOM_ERR_INTERNAL, "scheduler fcfs: the cache reported all " + std::to_string(cached) +
                                           " tokens of request " + std::to_string(id) +
                                           " as cached; at least one must be computed");
      }
      waiting_.pop_front();
      running_.push_back(id);
      st.schedule(id, n, cached);
      budget -= n;
    }
  }

  void stats(loom_sched_stats* out) const {
    out->num_waiting = static_cast<int32_t>(waiting_.size());
    out->num_running = static_cast<int32_t>(running_.size());
    out->num_preemptions = num_preemptions_;
  }

 private:
  template <class C>
  static bool contains(const C& c, uint64_t id) {
    return std::find(c.begin(), c.end(), id) != c.end();
  }

  // The host carries the preemption out (swap, then free) before this returns.
  void preempt(loom::sdk::SchedStep& st, uint64_t id) {
    st.preempt(id);
    running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
    waiting_.push_front(id);
    ++num_preemptions_;
  }

  Config cfg_;
  std::deque<uint64_t> waiting_;   // arrival order; preempted requests at the front
  std::vector<uint64_t> running_;  // admission order, oldest first
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(FcfsScheduler, "fcfs", "0.1.0",
                      "first come, first served with a token budget, chunked prefill and preemption of the newest");
