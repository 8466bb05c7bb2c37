// The copy worker: one thread that moves KV blocks between the staging buffers and the
// cache_offload tiers, so no tier copy (host memcpy, disk write, checksum) runs on the engine
// thread. Two queues; fetches go first (a request waits on them, a spill waits on nobody).
//
//   spill(entry, slot):   for each tier, top first: skip when it holds the key, else save the
//                         slot (write-through: every tier gets the block); then the slot is free.
//   fetch(id, keys):      for keys in order, a staging slot each, loaded from the first tier that
//                         holds it (a lower tier's hit is saved into the tiers above: promotion);
//                         stops at the first key no tier holds, or when no slot is free. The
//                         result (the slots, in key order) waits in the done list for take_done().
//
// Lifetime: the tiers and the staging outlive the worker. The destructor finishes queued spills
// (so a graceful shutdown leaves them in a persistent tier), drops queued fetches and frees their
// slots, then joins.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <unordered_set>
#include <vector>

#include "core/engine/kv_staging.hpp"
#include "core/engine/offload_tier.hpp"

namespace loom {

struct FetchResult {
  uint64_t request_id = 0;
  int32_t first_block = 0;     // block index of keys[0]
  std::vector<int32_t> slots;  // staging slots holding blocks first_block, first_block + 1, ...
  bool out_of_staging = false; // stopped because no slot was free
  int32_t load_failures = 0;   // tier reads that failed (not a plain miss)
};

class TierCopyWorker {
 public:
  TierCopyWorker(std::vector<OffloadTier*> tiers, KvStaging& staging);
  ~TierCopyWorker();
  TierCopyWorker(const TierCopyWorker&) = delete;
  TierCopyWorker& operator=(const TierCopyWorker&) = delete;

  // The slot belongs to the worker from here on.
  void spill(const loom_offload_entry& entry, int32_t slot);
  void fetch(uint64_t request_id, int32_t first_block, std::vector<uint64_t> keys);
  // Finished fetches since the last call.
  std::vector<FetchResult> take_done();
  // Forgets the request's fetch wherever it is (queued, running, done): its slots are freed and
  // take_done() never returns it.
  void cancel(uint64_t request_id);
  // Blocks until every queued job has run (tests, shutdown flushes).
  void wait_idle();
  // Jobs queued or running.
  int32_t pending() const;

 private:
  struct Spill {
    loom_offload_entry entry;
    int32_t slot;
  };
  struct Fetch {
    uint64_t request_id;
    int32_t first_block;
    std::vector<uint64_t> keys;
  };
  void run();
  void do_spill(const Spill& job);
  FetchResult do_fetch(const Fetch& job);

  std::vector<OffloadTier*> tiers_;  // top (fastest) first
  KvStaging* staging_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable idle_;
  std::deque<Spill> spills_;
  std::deque<Fetch> fetches_;
  std::vector<FetchResult> done_;
  std::unordered_set<uint64_t> cancelled_;  // fetches cancelled while running
  uint64_t running_fetch_ = 0;              // the request whose fetch runs now (0: none)
  int32_t running_ = 0;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace loom
