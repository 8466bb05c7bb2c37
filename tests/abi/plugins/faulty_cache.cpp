// cache "faults": a real cache (`inner`, e.g. libloom-cache-paged.so) with one injected fault
// (fault_plan.hpp). Any member may fail with "error" or "throw"; "bad_value" is defined for
//   block_table: the table's first block id lies past the pool (num_blocks + 7);
//   allocate:    reports more cached tokens than the request has.
// Interface 1.0 plus commit and match_prefix: no fork, trim or eviction reports.
#include <vector>

#include "fault_plan.hpp"
#include "loom/cache.h"
#include "loom/sdk.hpp"

namespace {

using loom::fault::Fault;

class FaultyCache : public loom::fault::Wrapper<loom_cache_vtable, loom_cache_create_args, LOOM_KIND_CACHE> {
 public:
  using Wrapper::Wrapper;

  loom_status layout(loom_cache_layout* out) {
    if (plan_.at("layout") == Fault::kError) return kStatus;
    inner_.call(vt().layout, out);
    num_blocks_ = out->num_blocks;
    return LOOM_OK;
  }
  loom_status fits(int32_t max_total_tokens, int32_t* ok) {
    if (plan_.at("fits") == Fault::kError) return kStatus;
    inner_.call(vt().fits, max_total_tokens, ok);
    return LOOM_OK;
  }
  loom_status match_prefix(const loom_request_view* r, int32_t* n) {
    if (plan_.at("match_prefix") == Fault::kError) return kStatus;
    inner_.call(vt().match_prefix, r, n);
    return LOOM_OK;
  }
  loom_status can_allocate(const loom_request_view* r, int32_t n, int32_t* ok) {
    if (plan_.at("can_allocate") == Fault::kError) return kStatus;
    inner_.call(vt().can_allocate, r, n, ok);
    return LOOM_OK;
  }
  loom_status allocate(const loom_request_view* r, int32_t n, int32_t* cached) {
    const Fault f = plan_.at("allocate");
    if (f == Fault::kError) return kStatus;
    inner_.call(vt().allocate, r, n, cached);
    if (f == Fault::kBadValue) *cached = r->num_tokens + 1;
    return LOOM_OK;
  }
  loom_status append(const loom_request_view* r, int32_t n) {
    if (plan_.at("append") == Fault::kError) return kStatus;
    inner_.call(vt().append, r, n);
    return LOOM_OK;
  }
  loom_status commit(const loom_request_view* r) {
    if (plan_.at("commit") == Fault::kError) return kStatus;
    inner_.call(vt().commit, r);
    return LOOM_OK;
  }
  loom_status free(uint64_t id) {
    if (plan_.at("free") == Fault::kError) return kStatus;
    inner_.call(vt().free, id);
    return LOOM_OK;
  }
  loom_status block_table(uint64_t id, loom_block_list* out) {
    const Fault f = plan_.at("block_table");
    if (f == Fault::kError) return kStatus;
    inner_.call(vt().block_table, id, out);
    if (f == Fault::kBadValue && out->count > 0) {
      spoiled_.assign(out->ids, out->ids + out->count);
      spoiled_[0] = num_blocks_ + 7;
      out->ids = spoiled_.data();
    }
    return LOOM_OK;
  }
  loom_status usage(loom_cache_usage* out) {
    if (plan_.at("usage") == Fault::kError) return kStatus;
    inner_.call(vt().usage, out);
    return LOOM_OK;
  }

 private:
  static constexpr loom_status kStatus = LOOM_ERR_INTERNAL;  // what "error" returns
  int32_t num_blocks_ = 0;
  std::vector<int32_t> spoiled_;  // the bad table handed out instead of the inner one
};

}  // namespace

LOOM_CACHE_PLUGIN(FaultyCache, "faults", "0.1.0", "a cache that fails on a chosen call (tests)");
