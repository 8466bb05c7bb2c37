// The scheduler skeleton: one request at a time, whole prompt first, then one token per step.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind scheduler_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
#include <deque>
#include <optional>

#include "loom/sdk_scheduler.hpp"

// Runs the oldest request alone until it finishes: the whole remaining prompt in its first step,
// then every gap the host reports. A request the empty pool can never hold is rejected. One
// request at a time never runs out of KV blocks (fits() said it fits an empty pool), so it needs
// no preemption; batching several requests is where your policy starts.
class @CLASS@ {
 public:
  @CLASS@(const loom::sdk::Host&, const loom_scheduler_create_args& args, std::string_view config)
      : max_model_len_(args.max_model_len) {
    @IDENT@_plugin::refuse_config_keys(config);
  }

  loom_status add_request(const loom_request_view* req) {
    waiting_.push_back(req->request_id);
    return LOOM_OK;
  }

  loom_status remove_request(uint64_t request_id) {
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), request_id), waiting_.end());
    if (running_ && *running_ == request_id) running_.reset();
    return LOOM_OK;
  }

  // Scheduler interface 1.1: loom::sdk::SchedStep wraps this call. Only the host frees KV blocks;
  // a policy that runs out of room names a victim with st.preempt(id) (see loom/scheduler.h).
  loom_status schedule(const loom_sched_context* ctx, loom_sched_output* out) {
    loom::sdk::SchedStep st(ctx, out, "scheduler @NAME@");
    if (running_) {
      const loom_request_view req = st.request(*running_);
      const int32_t gap = req.num_tokens - req.num_computed_tokens;
      if (gap <= 0) return LOOM_OK;
      if (!st.cache().append(req, gap))
        throw loom::sdk::Error(LOOM_ERR_OUT_OF_MEMORY, "scheduler @NAME@: the cache cannot grow the only running request");
      st.schedule(req.request_id, gap, 0);
      return LOOM_OK;
    }
    while (!waiting_.empty()) {
      const loom_request_view req = st.request(waiting_.front());
      if (req.max_total_tokens > max_model_len_) {
        st.reject(req.request_id, "scheduler @NAME@: request needs " + std::to_string(req.max_total_tokens) +
                                      " tokens, more than max_model_len " + std::to_string(max_model_len_));
        waiting_.pop_front();
        continue;
      }
      if (st.reject_if_never_fits(req)) {  // with the cache's reason
        waiting_.pop_front();
        continue;
      }
      if (!st.cache().can_allocate(req, req.num_tokens)) return LOOM_OK;  // wait for blocks to free up
      const int32_t cached = st.cache().allocate(req, req.num_tokens);   // a prefix hit covers `cached`
      if (cached >= req.num_tokens)
        throw loom::sdk::Error(LOOM_ERR_INTERNAL, "scheduler @NAME@: the cache left no token to compute");
      st.schedule(req.request_id, req.num_tokens - cached, cached);
      running_ = req.request_id;
      waiting_.pop_front();
      return LOOM_OK;
    }
    return LOOM_OK;
  }

  loom_status stats(loom_sched_stats* out) {
    out->num_waiting = static_cast<int32_t>(waiting_.size());
    out->num_running = running_ ? 1 : 0;
    out->num_preemptions = 0;
    return LOOM_OK;
  }

 private:
  int32_t max_model_len_;
  std::deque<uint64_t> waiting_;      // arrival order
  std::optional<uint64_t> running_;  // the one request running, if any
};
)skel";
  k.test_body = R"skel(    loom_scheduler_create_args args{};
    args.struct_size = sizeof(args);
    args.max_model_len = 64;
    @CLASS@ plugin(host, args, "{}");
    loom_request_view req{};
    req.struct_size = sizeof(req);
    req.request_id = 7;
    req.num_tokens = req.num_prompt_tokens = 3;
    req.max_total_tokens = 10;
    check(plugin.add_request(&req) == LOOM_OK, "add_request returns LOOM_OK");
    loom_sched_stats stats{};
    stats.struct_size = sizeof(stats);
    check(plugin.stats(&stats) == LOOM_OK && stats.num_waiting == 1 && stats.num_running == 0, "one request waits");
    check(plugin.remove_request(7) == LOOM_OK, "remove_request returns LOOM_OK");
    check(plugin.stats(&stats) == LOOM_OK && stats.num_waiting == 0, "nothing waits after remove_request");
    check(plugin.remove_request(99) == LOOM_OK, "an unknown id is not an error");)skel";
  return k;
}

}  // namespace loom::tools
