// Shared by the continuous and static schedulers (scheduler/common): a cache client that turns
// failed statuses into exceptions, and admission of a waiting request. The output arrays and
// preemption go through loom::sdk::SchedStep. Header-only and SDK-only, so each plugin stays one
// self-contained shared object. Config keys are read with loom/sdk_config.hpp.
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
#include "loom/sdk_scheduler.hpp"

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
    // The host frees what was allocated when the failed step ends the request.
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
