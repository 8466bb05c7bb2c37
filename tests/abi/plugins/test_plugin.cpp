// One small scheduler plugin, built many times (tests/abi/CMakeLists.txt) with LOOM_TEST_CASE
// choosing what to get wrong in its descriptor, its create or its vtable, so the host's refusal
// of each can be tested. Case kGood is a correct plugin: it schedules each request's whole gap,
// in arrival order, without a token budget.
#include <algorithm>
#include <cstdio>
#include <stdexcept>
#include <string>
#include <vector>

#include "loom/sdk.hpp"

#ifndef LOOM_TEST_CASE
#error "LOOM_TEST_CASE must be defined"
#endif
#ifndef LOOM_TEST_NAME
#error "LOOM_TEST_NAME must be defined"
#endif

namespace {

enum Case {
  kGood = 0,
  kBadAbi = 1,        // abi_version 99
  kShortDesc = 2,     // struct_size 16
  kThrows = 3,        // the constructor throws std::runtime_error
  kRefuses = 4,       // score() returns 0 with a reason
  kMajorNewer = 5,    // iface_major + 1
  kMinorNewer = 6,    // iface_minor + 7
  kIsCache = 7,       // says it is a cache plugin
  kWrongName = 8,     // descriptor name differs from the file's
  kShortVtable = 9,   // create hands back a vtable with struct_size 8
  kVariantLow = 10,   // score 1
  kVariantHigh = 11,  // score 5
  kNullDesc = 12,     // entry returns NULL
  kFreesItself = 13,  // schedule() calls the cache's free (only the host may)
  kSchedulesPreempted = 14,  // schedule() preempts a request, then schedules it anyway
  kSwapsWithoutTier = 15,    // schedule() asks for LOOM_PREEMPT_SWAP with swap_available == 0
  kPreemptsTwice = 16,       // schedule() preempts the same request twice
  kListsPreempted = 17,      // a 1.1 scheduler fills out->preempted (the 1.0 way)
  kRejectsWithReason = 18,   // schedule() rejects every request, with a reason
};
constexpr int kCase = LOOM_TEST_CASE;

class TestScheduler {
 public:
  TestScheduler(const loom::sdk::Host& host, const loom_scheduler_create_args&,
                std::string_view config_json) {
    if (kCase == kThrows) throw std::runtime_error("flux capacitor exploded at 88 mph");
    if (config_json != "{}") {
      throw loom::sdk::ConfigError("test scheduler takes no keys, got " + std::string(config_json));
    }
    host.info("test scheduler '", LOOM_TEST_NAME, "' created");
  }

  static int32_t score(const loom::sdk::Host&, std::string& reason) {
    if (kCase == kRefuses) {
      reason = "needs a quantum accelerator, found none";
      return 0;
    }
    return kCase == kVariantHigh ? 5 : 1;
  }

  loom_status add_request(const loom_request_view* req) {
    queue_.push_back(req->request_id);
    return LOOM_OK;
  }
  void remove_request(uint64_t id) {
    queue_.erase(std::remove(queue_.begin(), queue_.end(), id), queue_.end());
  }
  void schedule(const loom_sched_context* ctx, loom_sched_output* out) {
    out->num_scheduled = out->num_preempted = out->num_rejected = 0;
    if (kCase >= kFreesItself && kCase <= kListsPreempted && !queue_.empty()) misbehave(*ctx, *out);
    if (kCase == kRejectsWithReason) {
      for (uint64_t id : queue_) {
        std::snprintf(out->rejected_reasons + out->num_rejected * out->reason_size,
                      static_cast<size_t>(out->reason_size), "the test scheduler rejects request %llu",
                      static_cast<unsigned long long>(id));
        out->rejected[out->num_rejected++] = id;
      }
      return;
    }
    for (uint64_t id : queue_) {
      loom_request_view req{};
      req.struct_size = sizeof(req);
      if (ctx->get_request(ctx->host_ctx, id, &req) != LOOM_OK) continue;
      const int32_t n = req.num_tokens - req.num_computed_tokens;
      if (n > 0 && out->num_scheduled < out->scheduled_capacity) {
        out->scheduled[out->num_scheduled++] = loom_scheduled_request{id, n, 0};
      }
    }
  }
  // The contract breaches the host must refuse (cases kFreesItself..kListsPreempted).
  void misbehave(const loom_sched_context& ctx, loom_sched_output& out) {
    const uint64_t id = queue_.front();
    loom::sdk::ErrorBuffer err;
    auto preempt = [&](int32_t mode) {
      err.clear();
      loom::sdk::check(ctx.preempt(ctx.host_ctx, id, mode, err.buf()), err, "host preempt");
    };
    switch (kCase) {
      case kFreesItself:
        loom::sdk::check(ctx.cache.vtable->free(ctx.cache.self, id, err.buf()), err, "cache free");
        break;
      case kSchedulesPreempted:
        preempt(LOOM_PREEMPT_RECOMPUTE);  // and the loop below schedules it
        break;
      case kSwapsWithoutTier:
        preempt(LOOM_PREEMPT_SWAP);
        break;
      case kPreemptsTwice:
        preempt(LOOM_PREEMPT_RECOMPUTE);
        preempt(LOOM_PREEMPT_RECOMPUTE);
        break;
      case kListsPreempted:
        out.preempted[out.num_preempted++] = id;
        break;
      default:
        break;
    }
  }

  void stats(loom_sched_stats* out) {
    out->num_waiting = static_cast<int32_t>(queue_.size());
    out->num_running = 0;
    out->num_preemptions = 0;
  }

 private:
  std::vector<uint64_t> queue_;
};

using Plugin = loom::sdk::detail::Plugin<TestScheduler, loom_scheduler_vtable>;

// For kShortVtable: the real create, then a truncated copy of the vtable.
loom_status create_short_vtable(const loom_host_api* host, const void* args, const char* json,
                                void** self, const void** vtable, loom_error_buf* err) {
  static loom_scheduler_vtable shortened{};
  const loom_status s = Plugin::create(host, args, json, self, vtable, err);
  if (s == LOOM_OK) {
    shortened = *static_cast<const loom_scheduler_vtable*>(*vtable);
    shortened.struct_size = 8;
    *vtable = &shortened;
  }
  return s;
}

loom_plugin_desc make_desc() {
  loom_plugin_desc d = Plugin::describe(LOOM_TEST_NAME, "1.2.3", "ABI test plugin");
  switch (kCase) {
    case kBadAbi:
      d.abi_version = 99;
      break;
    case kShortDesc:
      d.struct_size = 16;
      break;
    case kMajorNewer:
      d.iface_major = LOOM_SCHEDULER_IFACE_MAJOR + 1;
      break;
    case kMinorNewer:
      d.iface_minor = LOOM_SCHEDULER_IFACE_MINOR + 7;
      break;
    case kIsCache:
      d.kind = LOOM_KIND_CACHE;
      break;
    case kWrongName:
      d.name = "someone_else";
      break;
    case kShortVtable:
      d.create = &create_short_vtable;
      break;
    case kVariantLow:
      d.description = "variant low";
      break;
    case kVariantHigh:
      d.description = "variant high";
      break;
    default:
      break;
  }
  return d;
}

const loom_plugin_desc* test_entry() {
  static const loom_plugin_desc desc = make_desc();
  return kCase == kNullDesc ? nullptr : &desc;
}

}  // namespace

BOOST_DLL_ALIAS(test_entry, loom_plugin_entry_v1)
