// scheduler/slo: scheduling in time, not only in tokens. Requests carry a class (their priority)
// and targets (TTFT from arrival, TPOT per token, interface 1.2's loom_request_view fields); the
// host's step-time model (ctx->predicted_step_us) says what a planned step will cost. The design
// note is at the top of schedule().
#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <tuple>
#include <utility>
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
  int32_t default_ttft_ms = 60000;  // the deadline of a request without a TTFT target
  int32_t default_tpot_ms = 0;      // the step bound while no running decode has a target; 0 = none
  double tpot_headroom = 0.9;       // steps are planned to this fraction of the tightest TPOT
  int32_t aging_ms = 10000;         // a waiting request rises one class per aging_ms; 0 = never
  double expire_factor = 0;         // > 0: a request still waiting after ttft * factor is refused
  int32_t min_prefill_chunk = 16;   // prompt tokens a step still takes when decodes fill the bound
  int32_t tpot_memory_ms = 10000;   // a TPOT target seen this recently still bounds steps
};

const loom::sdk::ConfigSpec<Config>& config_keys() {
  static const auto spec =
      loom_sched::batch_limits<Config>("scheduler slo")
          .integer("default_ttft_ms", &Config::default_ttft_ms, "deadline of a request without a TTFT target", 1)
          .integer("default_tpot_ms", &Config::default_tpot_ms,
                   "step bound while no running decode has a TPOT target; 0 = none", 0)
          .number("tpot_headroom", &Config::tpot_headroom, "fraction of the tightest TPOT a step is planned to",
                  0.01, 1.0)
          .integer("aging_ms", &Config::aging_ms, "waiting time after which a request rises one class; 0 = never", 0)
          .number("expire_factor", &Config::expire_factor,
                  "a request still queued after its TTFT target times this is refused; 0 = never", 0.0, 1000.0)
          .integer("min_prefill_chunk", &Config::min_prefill_chunk,
                   "prompt tokens a step takes even when decodes alone fill the time bound", 1)
          .integer("tpot_memory_ms", &Config::tpot_memory_ms,
                   "a TPOT target of a request that arrived this recently bounds steps even when no running "
                   "decode has one; 0 = only running decodes' targets",
                   0);
  return spec;
}

struct Entry {
  uint64_t id = 0;
  int32_t priority = 0;        // the view's: larger = more urgent
  int64_t arrival_us = 0;
  int64_t deadline_us = 0;     // arrival + TTFT target (or default_ttft_ms)
  int64_t expire_us = 0;       // refused when still waiting at this time; max = never
  int32_t tpot_ms = 0;         // 0 = none
  uint64_t tenant = 0;
  uint64_t seq = 0;            // add order: makes every order total
  int64_t waiting_since_us = 0;
  int32_t num_preemptions = 0;
  bool started = false;        // scheduled at least once (a preempted one expires no more)
};

class SloScheduler {
 public:
  SloScheduler(const loom::sdk::Host&, std::string_view config) : cfg_(config_keys().parse(config)) {}
  static const loom::sdk::ConfigSpec<Config>& config_spec() { return config_keys(); }

  void add_request(const loom_request_view* r) {
    if (r == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "request view is null");
    if (find(waiting_, r->request_id) != waiting_.end() || find(running_, r->request_id) != running_.end())
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler slo: request " + std::to_string(r->request_id) + " added twice");
    const loom::sdk::RequestSlo slo = loom::sdk::request_slo(*r);
    Entry e;
    e.id = r->request_id;
    e.priority = r->priority;
    e.arrival_us = r->arrival_time_us;
    const int64_t ttft_ms = slo.ttft_target_ms > 0 ? slo.ttft_target_ms : cfg_.default_ttft_ms;
    e.deadline_us = r->arrival_time_us + ttft_ms * 1000;
    e.expire_us = cfg_.expire_factor > 0 && slo.ttft_target_ms > 0
                      ? r->arrival_time_us + static_cast<int64_t>(static_cast<double>(ttft_ms) * 1000.0 * cfg_.expire_factor)
                      : std::numeric_limits<int64_t>::max();
    e.tpot_ms = slo.tpot_target_ms;
    e.tenant = slo.tenant_id;
    e.seq = next_seq_++;
    e.waiting_since_us = r->arrival_time_us;
    waiting_.push_back(e);
    if (e.tpot_ms > 0) {
      auto& seen = recent_tpot_[e.tpot_ms];
      seen = std::max(seen, r->arrival_time_us);
    }
  }

  void remove_request(uint64_t id) {
    if (auto it = find(waiting_, id); it != waiting_.end()) waiting_.erase(it);
    if (auto it = find(running_, id); it != running_.end()) running_.erase(it);
  }

  void schedule(const loom_sched_context* c, loom_sched_output* o) {
    // Design note.
    // Tokens, not phases, as in scheduler/continuous; what is new is time. Classes are the view's
    // priority (larger = more urgent; the API's priority negated), strict across classes.
    // 0. Waiting requests past their expiry (TTFT target x expire_factor, never computed) are
    //    refused with a reason naming the deadline: finishing them late helps nobody.
    // 1. Priority preemption: while the best waiting request (order of step 4) is of a higher
    //    class than the lowest running one and the cache cannot take its first chunk, that
    //    lowest one (latest deadline, newest among equals) is preempted, before anything is
    //    scheduled (so no victim is already in this step's output); that request is then
    //    admitted in this same step (step 4).
    // 2. Running decodes, every one, highest class first then earliest deadline; they are never
    //    cut. Out of blocks, the victim is the lowest class, then latest deadline, then newest, not
    //    yet scheduled this step (possibly the one being scheduled: then it waits).
    // 3. The step's time bound: tpot_headroom x the tightest TPOT among the running decodes and
    //    the requests that arrived in the last tpot_memory_ms (default_tpot_ms when none has
    //    one). The recent ones count because the next interactive request waits out the step in
    //    progress, and without them a best-effort prompt could be prefilled whole in one step
    //    (a second and more for 1024 tokens) whenever no interactive decode happened to run (the
    //    likely cause of an interactive TTFT p99 of 3.9 s in one mixed-load round; with the
    //    rule, 172-970 ms in four). Prefill chunks, of running partial prefills and of
    //    admissions alike, are cut so that the host's predicted step stays within it
    //    (StepTimeBudget), so a decode's next token never waits behind a long prompt; a step
    //    still takes min_prefill_chunk prompt tokens so prompts never starve.
    // 4. Admission order: effective class (class + one per aging_ms waited, so best effort
    //    finishes), then fair share (a tenant holding fewer running requests first), then
    //    earliest deadline, then arrival. It stops at the first that cannot be allocated, so a
    //    large urgent request is not overtaken; nothing is admitted in a step that preempted.
    // 5. Step 3's time goes by class, not by who started first: running prefills of a lower
    //    class than the best waiting request get what admissions of higher classes leave. A long
    //    best-effort prompt mid-prefill would otherwise take every step's prefill time, and an
    //    interactive request arriving behind it would wait out the whole prompt for its first
    //    token (mixed-load benchmark: interactive TTFT p99 2.4 s against a 1 s target).
    // Victim mode (steps 1 and 2): with a cache_offload tier, swap when its measured cost
    //    (ctx->swap_us_per_token x tokens) is below recomputing them (the model's predicted
    //    prefill of those tokens); swap too while either cost is still unmeasured, so it gets
    //    measured. Without a tier, recompute.
    loom::sdk::SchedStep step(c, o, "scheduler slo");
    now_us_ = c->now_us;
    expire_waiting(step);
    // Room made for a more urgent request is for admitting it: that does not stop admission.
    preempt_for_priority(step);
    StepState st{step, step.cache(), cfg_.max_num_batched_tokens, false, {}, {}};
    decode_pass(st);
    loom_sched::StepTimeBudget time(step, step_limit_us());
    for (const auto& [n, context_after] : st.decodes) time.add(true, n, context_after);
    // Step 5: prefills as urgent as the best waiting request, admissions of classes above the
    // rest, then the rest and what admission is left.
    constexpr int64_t kNone = std::numeric_limits<int64_t>::min();
    const int64_t top_waiting = waiting_.empty() ? kNone : effective_class(*best_waiting());
    const int64_t deferred = prefill_pass(st, time, top_waiting);
    if (!st.preempted_any && deferred != kNone) admit_waiting(st, time, deferred);
    prefill_pass(st, time, kNone);
    if (!st.preempted_any) admit_waiting(st, time, kNone);
  }

  void stats(loom_sched_stats* out) const {
    out->num_waiting = static_cast<int32_t>(waiting_.size());
    out->num_running = static_cast<int32_t>(running_.size());
    out->num_preemptions = num_preemptions_;
  }

 private:
  struct StepState {
    loom::sdk::SchedStep& step;
    CacheClient& cache;
    int32_t budget;
    bool preempted_any = false;
    std::unordered_set<uint64_t> scheduled;
    std::vector<std::pair<int32_t, int64_t>> decodes;  // (tokens, context after) of each decode
  };

  static std::vector<Entry>::iterator find(std::vector<Entry>& v, uint64_t id) {
    return std::find_if(v.begin(), v.end(), [id](const Entry& e) { return e.id == id; });
  }

  static bool is_decode(const loom_request_view& r) {
    const int32_t gap = r.num_tokens - r.num_computed_tokens;
    return gap == 1 || (gap > 0 && r.num_computed_tokens >= r.num_prompt_tokens);
  }

  int64_t effective_class(const Entry& e) const {
    if (cfg_.aging_ms <= 0) return e.priority;
    return int64_t{e.priority} + std::max<int64_t>(0, now_us_ - e.waiting_since_us) / (int64_t{cfg_.aging_ms} * 1000);
  }

  int32_t tenant_running(uint64_t tenant) const {
    if (tenant == 0) return 0;
    return static_cast<int32_t>(std::count_if(running_.begin(), running_.end(), [&](const Entry& e) { return e.tenant == tenant; }));
  }

  // Smaller is admitted first.
  auto admission_key(const Entry& e) const {
    return std::make_tuple(-effective_class(e), tenant_running(e.tenant), e.deadline_us, e.arrival_us, e.seq);
  }
  // Running order: highest class, earliest deadline, oldest.
  static auto run_key(const Entry& e) { return std::make_tuple(-int64_t{e.priority}, e.deadline_us, e.seq); }

  void expire_waiting(loom::sdk::SchedStep& step) {
    for (size_t i = 0; i < waiting_.size();) {
      const Entry& e = waiting_[i];
      if (e.started || now_us_ < e.expire_us) {
        ++i;
        continue;
      }
      step.reject(e.id, "deadline exceeded: still queued " + std::to_string((now_us_ - e.arrival_us) / 1000) +
                            " ms after arrival, past its TTFT target times expire_factor; not computed");
      waiting_.erase(waiting_.begin() + static_cast<std::ptrdiff_t>(i));
    }
  }

  std::vector<Entry>::iterator best_waiting() {
    return std::min_element(waiting_.begin(), waiting_.end(),
                            [this](const Entry& a, const Entry& b) { return admission_key(a) < admission_key(b); });
  }

  // The running request that gives way first, among those not in `scheduled`; running_.size() if none.
  size_t pick_victim(const std::unordered_set<uint64_t>& scheduled) const {
    size_t best = running_.size();
    for (size_t k = 0; k < running_.size(); ++k) {
      if (scheduled.count(running_[k].id) != 0) continue;
      if (best == running_.size() || run_key(running_[k]) > run_key(running_[best])) best = k;
    }
    return best;
  }

  // Swap or recompute, by what each would cost for this victim's computed tokens.
  loom_preempt_mode victim_mode(loom::sdk::SchedStep& step, const loom_request_view& v) const {
    if (step.ctx().swap_available == 0) return LOOM_PREEMPT_RECOMPUTE;
    const int32_t n = v.num_computed_tokens;
    const double swap_us = step.swap_us_per_token() * n;
    const double recompute_us =
        static_cast<double>(step.predicted_step_us(n, 0, n) - step.predicted_step_us(0, 0, 0));
    if (swap_us <= 0 || recompute_us <= 0) return LOOM_PREEMPT_SWAP;  // unmeasured: swap, and learn its cost
    return swap_us < recompute_us ? LOOM_PREEMPT_SWAP : LOOM_PREEMPT_RECOMPUTE;
  }

  void preempt(loom::sdk::SchedStep& step, size_t index) {
    Entry e = running_[index];
    const loom_request_view v = step.request(e.id);
    step.preempt(e.id, victim_mode(step, v));
    running_.erase(running_.begin() + static_cast<std::ptrdiff_t>(index));
    ++e.num_preemptions;
    e.waiting_since_us = now_us_;
    waiting_.push_back(e);
    ++num_preemptions_;
  }

  void preempt_for_priority(loom::sdk::SchedStep& step) {
    while (!waiting_.empty() && !running_.empty()) {
      const Entry best = *best_waiting();
      const size_t victim = pick_victim({});
      if (effective_class(best) <= running_[victim].priority) break;
      const loom_request_view req = step.request(best.id);
      const int32_t first = std::min(req.num_tokens, cfg_.min_prefill_chunk);
      if (step.cache().can_allocate(req, first)) break;
      preempt(step, victim);
    }
  }

  // Appends room for n tokens of `req`; out of blocks, the least important running request not
  // yet scheduled gives way, again until it fits. `id` is a candidate itself, so a higher class
  // never gives way to a lower one. False when `id` was the one preempted.
  bool make_room(StepState& st, uint64_t id, const loom_request_view& req, int32_t n) {
    while (!st.cache.append(req, n)) {
      const size_t v = pick_victim(st.scheduled);
      const bool self = running_[v].id == id;
      preempt(st.step, v);
      st.preempted_any = true;
      if (self) return false;
    }
    return true;
  }

  // Every running decode, most important first.
  void decode_pass(StepState& st) {
    std::vector<Entry> order = running_;
    std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) { return run_key(a) < run_key(b); });
    for (const Entry& e : order) {
      if (find(running_, e.id) == running_.end() || st.budget <= 0) continue;
      const loom_request_view req = st.step.request(e.id);
      if (!is_decode(req)) continue;
      const int32_t n = std::min(req.num_tokens - req.num_computed_tokens, st.budget);
      if (!make_room(st, e.id, req, n)) continue;
      st.step.schedule(e.id, n, 0);
      st.scheduled.insert(e.id);
      st.budget -= n;
      st.decodes.emplace_back(n, req.num_computed_tokens + n);
    }
  }

  int64_t step_limit_us() {
    int32_t tightest = 0;
    for (const Entry& e : running_)
      if (e.tpot_ms > 0 && (tightest == 0 || e.tpot_ms < tightest)) tightest = e.tpot_ms;
    const int64_t since = now_us_ - int64_t{cfg_.tpot_memory_ms} * 1000;
    for (auto it = recent_tpot_.begin(); it != recent_tpot_.end();) {
      if (it->second < since || cfg_.tpot_memory_ms == 0) {
        it = recent_tpot_.erase(it);
        continue;
      }
      if (tightest == 0 || it->first < tightest) tightest = it->first;
      ++it;
    }
    if (tightest == 0) tightest = cfg_.default_tpot_ms;
    return static_cast<int64_t>(static_cast<double>(tightest) * 1000.0 * cfg_.tpot_headroom);
  }

  // Schedules the prefill chunks of running requests of class >= min_class, most important
  // first. Returns the highest class of a running prefill it left for being below min_class
  // (numeric_limits<int64_t>::min() when none).
  int64_t prefill_pass(StepState& st, loom_sched::StepTimeBudget& time, int64_t min_class) {
    int64_t deferred = std::numeric_limits<int64_t>::min();
    std::vector<Entry> order = running_;
    std::sort(order.begin(), order.end(), [](const Entry& a, const Entry& b) { return run_key(a) < run_key(b); });
    for (const Entry& e : order) {
      if (st.budget <= 0) break;
      if (st.scheduled.count(e.id) != 0 || find(running_, e.id) == running_.end()) continue;
      const loom_request_view req = st.step.request(e.id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0 || is_decode(req)) continue;
      if (e.priority < min_class) {
        deferred = std::max<int64_t>(deferred, e.priority);
        continue;
      }
      const int32_t n = time.largest_chunk(std::min(gap, st.budget), req.num_computed_tokens, cfg_.min_prefill_chunk);
      if (n <= 0) break;  // the bound is spent: later prefills would not fit either
      if (!make_room(st, e.id, req, n)) continue;
      st.step.schedule(e.id, n, 0);
      st.scheduled.insert(e.id);
      st.budget -= n;
      time.add(false, n, req.num_computed_tokens + n);
    }
    return deferred;
  }

  // Admits waiting requests in admission order while their effective class is above `above`.
  void admit_waiting(StepState& st, loom_sched::StepTimeBudget& time, int64_t above) {
    while (!waiting_.empty() && static_cast<int32_t>(running_.size()) < cfg_.max_num_seqs && st.budget > 0) {
      const auto best = best_waiting();
      if (effective_class(*best) <= above) break;
      const loom_request_view req = st.step.request(best->id);
      if (st.step.reject_if_never_fits(req)) {
        waiting_.erase(best);
        continue;
      }
      const int32_t hit = st.cache.match_prefix(req);
      const int32_t limit = time.largest_chunk(st.budget, hit, cfg_.min_prefill_chunk);
      if (limit <= 0) break;
      int32_t n = 0;
      int32_t cached = 0;
      if (!loom_sched::admit(st.cache, req, hit, limit, &n, &cached)) break;
      Entry e = *best;
      e.started = true;
      waiting_.erase(best);
      running_.push_back(e);
      st.step.schedule(e.id, n, cached);
      st.scheduled.insert(e.id);
      st.budget -= n;
      time.add(false, n, cached + n);
    }
  }

  Config cfg_;
  std::vector<Entry> waiting_;
  std::vector<Entry> running_;  // admission order
  std::map<int32_t, int64_t> recent_tpot_;  // TPOT target (ms) -> latest arrival with it (us)
  int64_t now_us_ = 0;
  uint64_t next_seq_ = 0;
  int64_t num_preemptions_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(SloScheduler, "slo", "0.1.0",
                      "SLO-aware: strict priority, EDF within a class, TPOT-sized prefill chunks, cost-chosen preemption");
