// For scheduler plugins: the cache instance the host hands to schedule(), as a small C++ client
// whose calls throw loom::sdk::Error with the cache's message when a status is not LOOM_OK.
// It has no free: schedulers never free blocks; they propose preemptions to the host
// (loom::sdk::SchedStep::preempt, loom/scheduler.h).
#pragma once

#include <cstdint>
#include <string>

#include "loom/cache.h"
#include "loom/scheduler.h"
#include "loom/sdk_core.hpp"

namespace loom::sdk {

// Calls into the cache plugin, turning a failed status into an exception with its message.
class CacheClient {
 public:
  explicit CacheClient(const loom_cache_handle& h) : h_(h) {}

  bool fits(int32_t max_total_tokens, std::string* reason) {
    int32_t ok = 0;
    err_.clear();
    loom::sdk::check(h_.vtable->fits(h_.self, max_total_tokens, &ok, err_.buf()), err_, "cache fits");
    if (ok == 0) *reason = err_.str().empty() ? "too long for the KV cache" : std::string(err_.str());
    return ok != 0;
  }
  int32_t match_prefix(const loom_request_view& req) {
    if (h_.vtable->match_prefix == nullptr) return 0;
    int32_t n = 0;
    err_.clear();
    loom::sdk::check(h_.vtable->match_prefix(h_.self, &req, &n, err_.buf()), err_, "cache match_prefix");
    return n;
  }
  bool can_allocate(const loom_request_view& req, int32_t n) {
    int32_t ok = 0;
    err_.clear();
    loom::sdk::check(h_.vtable->can_allocate(h_.self, &req, n, &ok, err_.buf()), err_, "cache can_allocate");
    return ok != 0;
  }
  int32_t allocate(const loom_request_view& req, int32_t n) {
    int32_t cached = 0;
    err_.clear();
    loom::sdk::check(h_.vtable->allocate(h_.self, &req, n, &cached, err_.buf()), err_, "cache allocate");
    return cached;
  }
  // false on LOOM_ERR_OUT_OF_MEMORY (the cache leaves its state unchanged); other errors throw.
  bool append(const loom_request_view& req, int32_t n) {
    err_.clear();
    const loom_status s = h_.vtable->append(h_.self, &req, n, err_.buf());
    if (s == LOOM_ERR_OUT_OF_MEMORY) return false;
    loom::sdk::check(s, err_, "cache append");
    return true;
  }

 private:
  loom_cache_handle h_;
  loom::sdk::ErrorBuffer err_;
};

}  // namespace loom::sdk
