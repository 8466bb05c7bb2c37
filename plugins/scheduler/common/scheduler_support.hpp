// Shared by the continuous and static schedulers (scheduler/common): a cache client that turns
// failed statuses into exceptions, and the output-array helpers. Header-only and SDK-only, so each
// plugin stays one self-contained shared object. Config keys are read with loom/sdk_config.hpp.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "loom/scheduler.h"
#include "loom/sdk.hpp"
#include "loom/sdk_cache_client.hpp"
#include "loom/sdk_config.hpp"

namespace loom_sched {

using CacheClient = loom::sdk::CacheClient;

// The two limits every scheduler here has, with the defaults of scheduler/static and continuous.
struct BatchLimits {
  int32_t max_num_seqs = 256;
  int32_t max_num_batched_tokens = 2048;
};

// Their keys, for a Config with int32_t max_num_seqs and max_num_batched_tokens.
template <class Config>
loom::sdk::ConfigSpec<Config> batch_limits(const std::string& who) {
  return loom::sdk::ConfigSpec<Config>(who)
      .integer("max_num_seqs", &Config::max_num_seqs, "most requests holding KV blocks at once", 1)
      .integer("max_num_batched_tokens", &Config::max_num_batched_tokens, "most tokens computed in one step", 1);
}

inline void check_schedule_args(const loom_sched_context* c, loom_sched_output* o) {
  if (c == nullptr || o == nullptr || c->cache.vtable == nullptr)
    throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "schedule: context, cache or output is null");
  o->num_scheduled = 0;
  o->num_preempted = 0;
  o->num_rejected = 0;
}

// The request's current token counts, as the host sees them now.
inline loom_request_view request_view(const loom_sched_context& ctx, uint64_t id) {
  loom_request_view v{};
  v.struct_size = sizeof(v);
  if (ctx.get_request == nullptr || ctx.get_request(ctx.host_ctx, id, &v) != LOOM_OK)
    throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "scheduler: the host does not know request " + std::to_string(id));
  return v;
}

inline void push_scheduled(loom_sched_output& out, uint64_t id, int32_t n, int32_t cached) {
  if (out.num_scheduled >= out.scheduled_capacity)
    throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler: the scheduled array is full");
  out.scheduled[out.num_scheduled++] = loom_scheduled_request{id, n, cached};
}

inline void push_preempted(loom_sched_output& out, uint64_t id) {
  if (out.num_preempted >= out.preempted_capacity)
    throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler: the preempted array is full");
  out.preempted[out.num_preempted++] = id;
}

inline void push_rejected(loom_sched_output& out, uint64_t id) {
  if (out.num_rejected >= out.rejected_capacity)
    throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "scheduler: the rejected array is full");
  out.rejected[out.num_rejected++] = id;
}

// Starts a sequence for a waiting request with at most `limit` tokens to compute this step, after
// the prefix hit `hit` (from match_prefix, asked once per decision so the cache's lookup counters
// stay honest). Returns false (nothing changed) when the cache cannot hold it now; otherwise
// sets *num_new (>= 1) and *num_cached.
inline bool admit(CacheClient& cache, const loom_request_view& req, int32_t hit, int32_t limit, int32_t* num_new,
                  int32_t* num_cached) {
  const int32_t room = std::min(req.num_tokens, hit + limit);
  if (!cache.can_allocate(req, room)) return false;
  const int32_t cached = cache.allocate(req, room);
  if (cached >= room) {
    cache.free(req.request_id);
    throw loom::sdk::Error(LOOM_ERR_INTERNAL, "scheduler: the cache reported all " + std::to_string(cached) +
                                                  " tokens of request " + std::to_string(req.request_id) +
                                                  " as cached; at least one must be computed");
  }
  // A cache that reuses fewer tokens than it matched still only gets `limit` tokens computed.
  *num_new = std::min(room - cached, limit);
  *num_cached = cached;
  return true;
}

}  // namespace loom_sched
