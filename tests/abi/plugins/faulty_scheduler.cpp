// scheduler "faults": fault injection for the engine's failure isolation (hardening issue,
// deliverable 2). A plain scheduler (whole prompts, one request after another, no preemption:
// for tiny tests) that misbehaves on fixed calls:
//   add_request: the 2nd request it is given is refused (an error status);
//   schedule(): the 4th call throws; the 8th schedules an id nobody submitted and the 12th a
//   request with more new tokens than it has left (bad values).
#include <algorithm>
#include <stdexcept>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "loom/sdk_cache_client.hpp"
#include "loom/sdk_scheduler.hpp"

namespace {

using loom::sdk::Error;

class FaultyScheduler {
 public:
  FaultyScheduler(const loom::sdk::Host&, std::string_view config) {
    if (config != "{}") throw loom::sdk::ConfigError("scheduler faults takes no keys");
  }

  void add_request(const loom_request_view* r) {
    if (++adds_ == 2) throw Error(LOOM_ERR_INVALID_ARGUMENT, "injected fault: add_request call 2");
    queue_.push_back(r->request_id);
  }
  void remove_request(uint64_t id) { queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end()); }

  void schedule(const loom_sched_context* c, loom_sched_output* o) {
    loom::sdk::SchedStep st(c, o, "scheduler faults");
    ++schedules_;
    if (schedules_ == 4) throw std::runtime_error("injected fault: schedule call 4");
    if (schedules_ == 8) return st.schedule(987654321, 1, 0);
    for (uint64_t id : queue_) {
      const loom_request_view req = st.request(id);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) continue;
      const bool ok = req.num_computed_tokens == 0 ? st.cache().allocate(req, gap) >= 0 : st.cache().append(req, gap);
      if (!ok) throw Error(LOOM_ERR_OUT_OF_MEMORY, "scheduler faults: the pool is full (tests keep it small)");
      st.schedule(id, schedules_ == 12 ? gap + 5 : gap, 0);
    }
  }

  void stats(loom_sched_stats* out) const {
    out->num_waiting = 0;
    out->num_running = static_cast<int32_t>(queue_.size());
    out->num_preemptions = 0;
  }

 private:
  std::vector<uint64_t> queue_;
  int adds_ = 0;
  int schedules_ = 0;
};

}  // namespace

LOOM_SCHEDULER_PLUGIN(FaultyScheduler, "faults", "0.1.0", "fault injection for tests");
