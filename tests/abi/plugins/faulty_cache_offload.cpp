// cache_offload "faults": a real tier (`inner`, e.g. libloom-cache_offload-host.so) with one
// injected fault (fault_plan.hpp), "error" or "throw", in any member (a tier's answers leave the
// host nothing to check, so there is no "bad_value"). Interface 1.0 (no save_entry): the host
// calls save for prefix spills too. Calls may come from two threads (cache_offload.h): one lock.
#include <mutex>

#include "fault_plan.hpp"
#include "loom/cache_offload.h"
#include "loom/sdk.hpp"

namespace {

using loom::fault::Fault;

class FaultyCacheOffload : public loom::fault::Wrapper<loom_cache_offload_vtable, loom_cache_offload_create_args,
                                                        LOOM_KIND_CACHE_OFFLOAD> {
 public:
  using Wrapper::Wrapper;

  loom_status save(uint64_t key, int32_t block_id) {
    const std::lock_guard lock(mutex_);
    if (plan_.at("save") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().save, key, block_id);
    return LOOM_OK;
  }
  loom_status load(uint64_t key, int32_t block_id) {
    const std::lock_guard lock(mutex_);
    if (plan_.at("load") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().load, key, block_id);
    return LOOM_OK;
  }
  loom_status contains(uint64_t key, int32_t* present) {
    const std::lock_guard lock(mutex_);
    if (plan_.at("contains") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().contains, key, present);
    return LOOM_OK;
  }
  loom_status drop(uint64_t key) {
    const std::lock_guard lock(mutex_);
    if (plan_.at("drop") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().drop, key);
    return LOOM_OK;
  }
  loom_status usage(loom_cache_offload_usage* out) {
    const std::lock_guard lock(mutex_);
    if (plan_.at("usage") == Fault::kError) return LOOM_ERR_INTERNAL;
    inner_.call(vt().usage, out);
    return LOOM_OK;
  }

 private:
  std::mutex mutex_;  // the fault plan's counters
};

}  // namespace

LOOM_CACHE_OFFLOAD_PLUGIN(FaultyCacheOffload, "faults", "0.1.0", "a KV tier that fails on a chosen call (tests)");
