// scheduler/continuous: continuous batching in the style of vLLM v1. Every step mixes decodes,
// prefill chunks and newly admitted requests under one token budget; a request joins the batch the
// step it is admitted and leaves it the step it finishes. The design note is at the top of
// schedule().
#include <algorithm>
#include <cmath>
#include <string>
#include <tuple>
#include <unordered_set>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "common/scheduler_support.hpp"
#include "common/step_time_budget.hpp"

namespace {

using loom::sdk::Error;
using loom_sched::CacheClient;

struct Config {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
  int32_t long_prefill_token_threshold = 0;  // 0 = a prefill chunk may take the whole budget
  bool enable_chunked_prefill = true;
  int32_t preemption_aging_steps = 32;
  int32_t max_step_ms = 0;  // 0 = no time bound on a step
  int32_t max_step_stretch = 1;  // most the bound grows by while over twice as many wait as run
  int32_t max_step_stretch_after = 1;  // steps in a row over twice as many must wait before it grows
};

// While decodes alone exceed max_step_ms, a step still advances prompts by this many tokens.
// Small, because the floor also bounds a step whose decodes nearly fill max_step_ms: with 16, a
// 25 ms bound beside 4 decodes of llama-125m on 2 cores gave 28 ms steps (16 prompt tokens cost
// 12 ms there), so the bound was not kept; with 8 the steps stay at 24-25 ms.
constexpr int32_t kMinPrefillChunk = 8;

const loom::sdk::ConfigSpec<Config>& config_keys() {
  static const auto spec = loom_sched::batch_limits<Config>("scheduler continuous")
      .integer("long_prefill_token_threshold", &Config::long_prefill_token_threshold,
               "most tokens of one prefill chunk; 0 = the whole budget", 0)
      .boolean("enable_chunked_prefill", &Config::enable_chunked_prefill, "split long prompts across steps")
      .integer("preemption_aging_steps", &Config::preemption_aging_steps,
               "preemptions after which a request is spared as a victim, and steps of waiting after "
               "which it is admitted first", 1)
      .integer("max_step_ms", &Config::max_step_ms,
               "longest step planned by the host's step-time model: prefill chunks are cut to fit; 0 = no bound", 0)
      .integer("max_step_stretch", &Config::max_step_stretch,
               "while over twice as many requests wait as run, max_step_ms grows by waiting / running - 1, "
               "at most this many times; 1 = a fixed bound", 1)
      .integer("max_step_stretch_after", &Config::max_step_stretch_after,
               "steps in a row with over twice as many requests waiting as running before the bound stretches "
               "(a burst that admission clears sooner keeps the bound)", 1);
  return spec;
}

// One request as the scheduler tracks it; token counts are read fresh from the host each step.
struct Entry {
  uint64_t id = 0;
  int32_t priority = 0;
  int64_t arrival_us = 0;
  uint64_t seq = 0;            // add order: makes the admission order total
  int64_t waiting_since = 0;   // the step count when it last entered the waiting queue
  int32_t num_preemptions = 0;
};

// What one schedule() call accumulates while it walks the queues.
struct StepState {
  loom::sdk::SchedStep& step;
  CacheClient& cache;
  int32_t budget;
  loom_sched::StepTimeBudget time;
  bool preempted_any = false;
  std::unordered_set<uint64_t> scheduled;
};

class ContinuousScheduler {
 public:
  ContinuousScheduler(const loom::sdk::Host&, std::string_view config) : cfg_(config_keys().parse(config)) {}

  static const loom::sdk::ConfigSpec<Config>& config_spec() { return config_keys(); }

  void add_request(const loom_request_view* r) {
    if (r == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is null");
    if (find(waiting_, r->request_id) != waiting_.end() || find(running_, r->request_id) != running_.end())
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "scheduler continuous: request " + std::to_string(r->request_id) + " added twice");
    waiting_.push_back(Entry{r->request_id, r->priority, r->arrival_time_us, next_seq_++, step_, 0});
  }

  void remove_request(uint64_t id) {
    if (auto it = find(waiting_, id); it != waiting_.end()) waiting_.erase(it);
    if (auto it = find(running_, id); it != running_.end()) running_.erase(it);
  }

  void schedule(const loom_sched_context* c, loom_sched_output* o) {
    // Design note.
    // Tokens, not phases: a request's gap (num_tokens - num_computed_tokens) is a prompt chunk,
    // a recompute after preemption or one decode token; a step closes part of each gap within
    // max_num_batched_tokens.
    // 1. Running requests first, in admission order, in two passes: decodes (gap 1, or the prompt
    //    already computed) get their tokens first, because they are latency-bound and cheap; then
    //    partially prefilled requests advance min(gap, budget left, long_prefill_token_threshold)
    //    tokens, so a long prompt is spread over steps instead of stalling everyone's decode.
    // 2. Room comes from ctx->cache.append. When it is out of blocks, the newest running request
    //    not yet scheduled this step is preempted (the host swaps or frees its blocks at once; it
    //    goes back to waiting) and the append retried. Requests already preempted preemption_aging_steps times
    //    are passed over as victims while any other candidate exists, so a long request is not
    //    thrown out forever by newer ones. When the victim is the request being scheduled it
    //    preempts itself and the step stops there: the cache is full.
    // 3. Then waiting requests, best first: those waiting preemption_aging_steps steps or more
    //    (oldest arrival first), then higher priority, then previously preempted ones (they go back
    //    to the front), then arrival. Admission stops at the first that cannot be allocated now,
    //    so a large request is not overtaken forever by small ones; one that can never fit the
    //    pool is rejected with the cache's reason. Nothing is admitted in a step that preempted:
    //    the pool is full.
    // 4. With max_step_ms, every prefill chunk (passes 1 and 3) is also cut to what the host's
    //    step-time model says fits in the step beside what is already planned, so a decode waits
    //    about max_step_ms at most for its next token; decodes themselves are never cut, and a
    //    step still takes a floor of prompt tokens (prefill_floor: 8, or 1/32 of the context for
    //    a long prompt) when decodes alone fill the bound. A
    //    prompt alone in the scheduler (nothing else running or waiting) is not cut by time: no
    //    decode waits behind it, and each extra step would add its fixed cost to the TTFT.
    // 5. Once over twice as many requests have waited as run for max_step_stretch_after steps in a
    //    row, the bound grows by waiting / running - 1, at most max_step_stretch times. A step's
    //    fixed cost (every weight read once, the output head per decode row) does not shrink with
    //    its chunk: when it nearly fills the bound, prompts
    //    advance by the floor only, wait, and the running batch shrinks to what that trickle of
    //    prefill feeds (measured: a 128k-vocabulary llama-125m at 32 streams, TTFT p50 15 s and
    //    0.47x vLLM's throughput, docs/benchmarks.md). The few running then wait longer per token,
    //    up to max_step_stretch x max_step_ms, while the many waiting get their first token sooner.
    //    Off in the plugin's defaults (1). Counted without a streak (max_step_stretch_after = 1),
    //    at 8 streams on llama-125m the bursts of a closed loop stretched steps often enough to
    //    raise ITL p99 from 33 to 40 ms for no throughput, while at 32 streams a stretch of 4 gave
    //    1.17x llama-server's throughput against 1.08x, TPOT p99 52 ms against llama-server's 210
    //    (docs/benchmarks.md, fixed concurrency). A burst is admitted within a few steps; the
    //    starvation above lasts seconds: the streak tells them apart.
    loom::sdk::SchedStep step(c, o, "scheduler continuous");
    ++step_;
    starved_steps_ = waiting_.size() > 2 * running_.size() ? starved_steps_ + 1 : 0;
    const bool alone = running_.size() + waiting_.size() == 1;
    const int64_t limit_us = alone ? 0 : step_limit_us();
    StepState st{step, step.cache(), cfg_.max_num_batched_tokens, loom_sched::StepTimeBudget(step, limit_us), false,
                 {}};
    if (run_pass(st, /*decodes=*/true) && run_pass(st, /*decodes=*/false) && !st.preempted_any) admit_waiting(st);
  }

  // max_step_ms in microseconds, stretched by waiting / running - 1 (rule 5 above); 0 = no bound.
  int64_t step_limit_us() const {
    if (cfg_.max_step_ms <= 0) return 0;
    if (starved_steps_ < cfg_.max_step_stretch_after) return int64_t{cfg_.max_step_ms} * 1000;
    const double most = cfg_.max_step_stretch;
    const double excess =
        running_.empty() ? most : static_cast<double>(waiting_.size()) / static_cast<double>(running_.size()) - 1.0;
    return std::llround(cfg_.max_step_ms * 1000.0 * std::clamp(excess, 1.0, most));
  }

  void stats(loom_sched_stats* out) const {
    out->num_waiting = static_cast<int32_t>(waiting_.size());
    out->num_running = static_cast<int32_t>(running_.size());
    out->num_preemptions = num_preemptions_;
  }

 private:
  static std::vector<Entry>::iterator find(std::vector<Entry>& v, uint64_t id) {
    return std::find_if(v.begin(), v.end(), [id](const Entry& e) { return e.id == id; });
  }

  // The floor of a prompt chunk after `computed` tokens: kMinPrefillChunk, or 1/32 of the context
  // it attends to, whichever is larger. A chunk reads its whole context's KV from memory again, so
  // 8-token chunks of a long prompt spend most of their step re-reading it (a mixed load of
  // 1024-token prompts sent at once: 1.24 req/s with a floor of 8 under max_step_ms = 25, 1.41
  // with this one, 1.66 with no floor change and max_step_ms = 50).
  static int32_t prefill_floor(int64_t computed) {
    return static_cast<int32_t>(std::max<int64_t>(kMinPrefillChunk, computed / 32));
  }

  int32_t prefill_limit(int32_t budget) const {
    return cfg_.long_prefill_token_threshold > 0 ? std::min(budget, cfg_.long_prefill_token_threshold) : budget;
  }

  // Schedules the running requests of one kind. Returns false when one preempted itself.
  bool run_pass(StepState& st, bool decodes) {
    for (size_t i = 0; i < running_.size() && st.budget > 0; ++i) {
      const uint64_t id = running_[i].id;
      if (st.scheduled.count(id) != 0) continue;
      const loom_request_view req = st.step.request(id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) continue;
      const bool decode = gap == 1 || req.num_computed_tokens >= req.num_prompt_tokens;
      if (decode != decodes) continue;
      int32_t n = std::min(gap, decode ? st.budget : prefill_limit(st.budget));
      if (!decode && cfg_.enable_chunked_prefill)
        n = st.time.largest_chunk(n, req.num_computed_tokens, prefill_floor(req.num_computed_tokens));
      if (n <= 0) continue;
      while (!st.cache.append(req, n)) {
        const size_t v = pick_victim(st.scheduled);
        const bool self = running_[v].id == id;
        preempt(v, st);
        if (self) return false;
        if (v < i) --i;  // an older, not yet scheduled prefill gave way: keep pointing at `id`
      }
      st.step.schedule(id, n, 0);
      st.scheduled.insert(id);
      st.budget -= n;
      st.time.add(decode, n, req.num_computed_tokens + n);
    }
    return true;
  }

  // The newest running request not scheduled this step, preferring unprotected ones. The request
  // being scheduled is itself a candidate, so there always is one.
  size_t pick_victim(const std::unordered_set<uint64_t>& scheduled) const {
    size_t fallback = running_.size();
    for (size_t k = running_.size(); k-- > 0;) {
      if (scheduled.count(running_[k].id) != 0) continue;
      if (running_[k].num_preemptions < cfg_.preemption_aging_steps) return k;
      if (fallback == running_.size()) fallback = k;
    }
    if (fallback == running_.size()) throw Error(LOOM_ERR_INTERNAL, "scheduler continuous: no preemption candidate");
    return fallback;
  }

  // The host carries the preemption out (swap, then free) before step.preempt returns.
  void preempt(size_t index, StepState& st) {
    Entry e = running_[index];
    st.step.preempt(e.id);
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
    ++e.num_preemptions;
    e.waiting_since = step_;
    waiting_.push_back(e);
    ++num_preemptions_;
    st.preempted_any = true;
  }

  auto admission_key(const Entry& e) const {
    const bool aged = step_ - e.waiting_since >= cfg_.preemption_aging_steps;
    // Among aged requests only arrival counts: all of them have waited too long already.
    if (aged) return std::make_tuple(0, int64_t{0}, 0, e.arrival_us, e.seq);
    return std::make_tuple(1, -int64_t{e.priority}, e.num_preemptions > 0 ? 0 : 1, e.arrival_us, e.seq);
  }

  void admit_waiting(StepState& st) {
    while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < cfg_.max_num_seqs && st.budget > 0) {
      const auto best = std::min_element(waiting_.begin(), waiting_.end(), [this](const Entry& a, const Entry& b) {
        return admission_key(a) < admission_key(b);
      });
      const loom_request_view req = st.step.request(best->id);
      if (st.step.reject_if_never_fits(req)) {
        waiting_.erase(best);
        continue;
      }
      const int32_t hit = st.cache.match_prefix(req);
      int32_t limit = st.budget;
      if (cfg_.enable_chunked_prefill) {
        limit = prefill_limit(st.budget);
      } else if (req.num_tokens - hit > st.budget) {
        // Without chunking a prompt waits for a step with budget for all of it. One longer than
        // the whole budget never gets one, so it alone takes a fresh step's budget, chunked.
        if (st.budget < cfg_.max_num_batched_tokens) break;
      }
      if (cfg_.enable_chunked_prefill) limit = st.time.largest_chunk(limit, hit, prefill_floor(hit));
      if (limit <= 0) break;
      int32_t n = 0;
      int32_t cached = 0;
      if (!loom_sched::admit(st.cache, req, hit, limit, &n, &cached)) break;
      st.time.add(false, n, cached + n);
      Entry e = *best;
      waiting_.erase(best);
      running_.push_back(e);
      st.step.schedule(e.id, n, cached);
      st.scheduled.insert(e.id);
      st.budget -= n;
    }
  }

  Config cfg_;
  std::vector<Entry> waiting_;  // any order: admission picks the best by admission_key
  std::vector<Entry> running_;  // admission order, oldest first
  int64_t step_ = 0;
  int64_t starved_steps_ = 0;  // steps in a row that began with over twice as many waiting as running
  uint64_t next_seq_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(ContinuousScheduler, "continuous", "0.1.0",
                      "continuous batching: decodes first, chunked prefill, newest-first preemption with aging");
