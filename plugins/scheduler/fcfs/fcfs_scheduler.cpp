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
    //    is preempted (its blocks freed, it goes back to the front of waiting, the host recomputes
    //    it later) and the append is retried; a request that is itself the newest preempts itself.
    //    Preempted requests were never scheduled this step: scheduling walks from the oldest and
    //    preemption takes from the newest.
    // 2. Then waiting requests in arrival order, while there is a free sequence slot and token
    //    budget: one that can never fit the pool is rejected; the first one that cannot be
    //    allocated now stops admission (strict FCFS: nobody overtakes it); otherwise it gets
    //    min(remaining prompt, budget) tokens, so a long prompt is chunked across steps.
    //    No admission in a step that preempted: the pool is full, and a preempted request's
    //    token counts are only reset by the host after this step.
    if (c == nullptr || o == nullptr || c->cache.vtable == nullptr)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "schedule: context, cache or output is null");
    const loom_sched_context& ctx = *c;
    loom_sched_output& out = *o;
    out.num_scheduled = 0;
    out.num_preempted = 0;
    out.num_rejected = 0;
    Cache cache(ctx.cache);
    int32_t budget = cfg_.max_num_batched_tokens;
    bool preempted_any = false;

    for (size_t i = 0; i < running_.size() && budget > 0;) {
      const uint64_t id = running_[i];
      const loom_request_view req = view(ctx, id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) {
        ++i;
        continue;
      }
      const int32_t n = std::min(gap, budget);
      bool self_preempted = false;
      while (!cache.append(req, n)) {
        const uint64_t victim = running_.back();
        preempt(cache, victim, out);
        preempted_any = true;
        if (victim == id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;  // it was the newest: nobody after it is left running
      push_scheduled(out, id, n, 0);
      budget -= n;
      ++i;
    }

    while (!preempted_any && !waiting_.empty() && static_cast<int32_t>(running_.size()) < cfg_.max_num_seqs &&
           budget > 0) {
      const uint64_t id = waiting_.front();
      const loom_request_view req = view(ctx, id);
      std::string reason;
      if (!cache.fits(req.max_total_tokens, &reason)) {
        push_id(out.rejected, out.rejected_capacity, out.num_rejected, id, "rejected");
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
        cache.free(id);
        throw Error(LOOM_ERR_INTERNAL, "scheduler fcfs: the cache reported all " + std::to_string(cached) +
                                           " tokens of request " + std::to_string(id) +
                                           " as cached; at least one must be computed");
      }
      waiting_.pop_front();
      running_.push_back(id);
      push_scheduled(out, id, n, cached);
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

  static loom_request_view view(const loom_sched_context& ctx, uint64_t id) {
    loom_request_view v{};
    v.struct_size = sizeof(v);
    if (ctx.get_request == nullptr || ctx.get_request(ctx.host_ctx, id, &v) != LOOM_OK)
      throw Error(LOOM_ERR_NOT_FOUND, "scheduler fcfs: the host does not know request " + std::to_string(id));
    return v;
  }

  void preempt(Cache& cache, uint64_t id, loom_sched_output& out) {
    cache.free(id);
    running_.erase(std::remove(running_.begin(), running_.end(), id), running_.end());
    waiting_.push_front(id);
    push_id(out.preempted, out.preempted_capacity, out.num_preempted, id, "preempted");
    ++num_preemptions_;
  }

  static void push_scheduled(loom_sched_output& out, uint64_t id, int32_t n, int32_t cached) {
    if (out.num_scheduled >= out.scheduled_capacity)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler fcfs: the scheduled array is full");
    out.scheduled[out.num_scheduled++] = loom_scheduled_request{id, n, cached};
  }

  static void push_id(uint64_t* arr, int32_t capacity, int32_t& count, uint64_t id, const char* what) {
    if (count >= capacity)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, std::string("scheduler fcfs: the ") + what + " array is full");
    arr[count++] = id;
  }

  Config cfg_;
  std::deque<uint64_t> waiting_;   // arrival order; preempted requests at the front
  std::vector<uint64_t> running_;  // admission order, oldest first
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(FcfsScheduler, "fcfs", "0.1.0",
                      "first come, first served with a token budget, chunked prefill and preemption of the newest");
