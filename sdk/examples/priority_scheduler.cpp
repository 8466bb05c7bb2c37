// scheduler/priority: an example third-party plugin, built against the Loom SDK alone.
//
// Highest request priority first, first come first served within a priority. Each step has a
// token budget (max_num_batched_tokens) and at most max_num_seqs requests hold KV blocks.
// Prefill is never chunked: a waiting request is admitted when its whole gap fits the budget
// left and the cache can give it room now; otherwise it (and everything behind it) waits.
#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"
#include "loom/sdk_scheduler.hpp"

namespace {

using loom::sdk::ConfigError;
using loom::sdk::Error;
using loom::sdk::ErrorBuffer;

struct Config {
  int32_t max_num_seqs = 16;
  int32_t max_num_batched_tokens = 2048;
};

// One request as the scheduler tracks it; token counts are read fresh from the host each step.
struct Entry {
  uint64_t id;
  int32_t priority;
  int64_t arrival_us;
  uint64_t seq;  // add order: breaks arrival-time ties so the order is total

  // Sort key: higher priority first, then earlier arrival.
  auto key() const { return std::make_tuple(-static_cast<int64_t>(priority), arrival_us, seq); }
};

bool before(const Entry& a, const Entry& b) { return a.key() < b.key(); }

class PriorityScheduler {
 public:
  // The config keys (sdk_config.hpp): parsed before the constructor runs, every problem at once,
  // and published in the descriptor's config_schema.
  static const loom::sdk::ConfigSpec<Config>& config_spec() {
    static const auto spec =
        loom::sdk::ConfigSpec<Config>("scheduler priority")
            .integer("max_num_seqs", &Config::max_num_seqs, "most requests holding KV blocks at once", 1)
            .integer("max_num_batched_tokens", &Config::max_num_batched_tokens,
                     "token budget of a step; at least max_model_len (prompts are not chunked)", 1);
    return spec;
  }

  PriorityScheduler(const loom::sdk::Host& host, const loom_scheduler_create_args& args, const Config& cfg)
      : host_(host), cfg_(cfg) {
    // Prefill is not chunked, so the longest sequence must fit one step's budget.
    if (cfg_.max_num_batched_tokens < args.max_model_len) {
      throw ConfigError("scheduler priority: max_num_batched_tokens (" + std::to_string(cfg_.max_num_batched_tokens) +
                        ") must be >= max_model_len (" + std::to_string(args.max_model_len) +
                        "): this scheduler prefills a whole prompt in one step");
    }
    host_.debug("max_num_seqs=", cfg_.max_num_seqs,
                " max_num_batched_tokens=", cfg_.max_num_batched_tokens);
  }

  loom_status add_request(const loom_request_view* req) {
    if (req == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "add_request: NULL request");
    if (find(waiting_, req->request_id) || find(running_, req->request_id)) {
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "add_request: request " + std::to_string(req->request_id) + " already queued");
    }
    insert_sorted(waiting_,
                  Entry{req->request_id, req->priority, req->arrival_time_us, next_seq_++});
    return LOOM_OK;
  }

  loom_status remove_request(uint64_t request_id) {
    erase(waiting_, request_id);
    erase(running_, request_id);
    return LOOM_OK;
  }

  // Design note. One step = (1) reject waiting requests that can never fit the pool,
  // (2) advance every running request by its gap (one decode token), highest priority first,
  // preempting from the lowest-priority end of `running_` when the cache has no block to append
  // (the host swaps or frees the victim's blocks before ctx->preempt returns),
  // (3) admit waiting requests in priority order while the budget, max_num_seqs and the cache
  // allow; the first one that does not fit stops admission (no overtaking within the order).
  // Invariant: waiting_ and running_ are sorted by Entry::key; every running_ request holds
  // blocks; a request preempted this step is not re-admitted in the same step.
  loom_status schedule(const loom_sched_context* ctx, loom_sched_output* out) {
    loom::sdk::SchedStep step(ctx, out, "scheduler priority");
    ErrorBuffer err;
    const loom_cache_handle& cache = ctx->cache;
    int32_t budget = cfg_.max_num_batched_tokens;

    // (1) Rejections: the cache says the request could never fit, even in an empty pool.
    for (size_t i = 0; i < waiting_.size();) {
      const loom_request_view req = step.request(waiting_[i].id);
      int32_t ok = 0;
      err.clear();
      loom::sdk::check(cache.vtable->fits(cache.self, req.max_total_tokens, &ok, err.buf()), err,
                       "cache fits");
      if (ok == 0) {
        host_.info("rejecting request ", req.request_id, ": ", err.str());
        step.reject(req.request_id, err.str());
        waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      } else {
        ++i;
      }
    }

    // (2) Running requests, highest priority first.
    std::vector<uint64_t> preempted_now;
    for (size_t i = 0; i < running_.size(); ++i) {
      const Entry entry = running_[i];
      const loom_request_view req = step.request(entry.id);
      const int32_t n = req.num_tokens - req.num_computed_tokens;
      if (n <= 0 || n > budget) continue;
      bool self_preempted = false;
      for (;;) {
        err.clear();
        const loom_status s = cache.vtable->append(cache.self, &req, n, err.buf());
        if (s == LOOM_OK) break;
        if (s != LOOM_ERR_OUT_OF_MEMORY) loom::sdk::check(s, err, "cache append");
        // Out of blocks: the host preempts the lowest-priority running request (possibly this
        // one); schedulers never free blocks themselves.
        const Entry victim = running_.back();
        running_.pop_back();
        step.preempt(victim.id);
        preempted_now.push_back(victim.id);
        insert_sorted(waiting_, victim);
        ++num_preemptions_;
        if (victim.id == entry.id) {
          self_preempted = true;
          break;
        }
      }
      if (self_preempted) break;  // everything after it was lower priority and is gone too
      step.schedule(entry.id, n, 0);
      budget -= n;
    }

    // (3) Admission, in priority order, stopping at the first request that does not fit.
    for (size_t i = 0; i < waiting_.size();) {
      if (static_cast<int32_t>(running_.size()) >= cfg_.max_num_seqs) break;
      const Entry entry = waiting_[i];
      if (std::find(preempted_now.begin(), preempted_now.end(), entry.id) != preempted_now.end()) {
        ++i;  // it just lost its blocks; it may come back next step
        continue;
      }
      const loom_request_view req = step.request(entry.id);
      const int32_t n = req.num_tokens - req.num_computed_tokens;
      if (n > budget) break;
      int32_t ok = 0;
      err.clear();
      loom::sdk::check(cache.vtable->can_allocate(cache.self, &req, n, &ok, err.buf()), err,
                       "cache can_allocate");
      if (ok == 0) break;
      int32_t cached = 0;
      err.clear();
      loom::sdk::check(cache.vtable->allocate(cache.self, &req, n, &cached, err.buf()), err,
                       "cache allocate");
      cached = std::clamp(cached, 0, n);
      step.schedule(entry.id, n - cached, cached);
      budget -= n - cached;
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
      insert_sorted(running_, entry);
    }
    return LOOM_OK;
  }

  loom_status stats(loom_sched_stats* out) {
    if (out == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "stats: NULL output");
    out->num_waiting = static_cast<int32_t>(waiting_.size());
    out->num_running = static_cast<int32_t>(running_.size());
    out->num_preemptions = num_preemptions_;
    return LOOM_OK;
  }

 private:
  static bool find(const std::vector<Entry>& q, uint64_t id) {
    return std::any_of(q.begin(), q.end(), [id](const Entry& e) { return e.id == id; });
  }
  static void erase(std::vector<Entry>& q, uint64_t id) {
    q.erase(std::remove_if(q.begin(), q.end(), [id](const Entry& e) { return e.id == id; }),
            q.end());
  }
  static void insert_sorted(std::vector<Entry>& q, const Entry& e) {
    q.insert(std::upper_bound(q.begin(), q.end(), e, before), e);
  }

  loom::sdk::Host host_;
  Config cfg_;
  std::vector<Entry> waiting_;  // sorted by Entry::key
  std::vector<Entry> running_;  // sorted by Entry::key; all hold KV blocks
  uint64_t next_seq_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(PriorityScheduler, "priority", "0.1.0",
                      "highest priority first, FCFS within a priority, preempts the lowest");
