// cache/paged, cache/radix: the 1.1 prefix-cache miss counters -- why each lookup's missed
// tokens missed -- and the bounded record of evicted block hashes that tells "evicted" apart.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <unordered_set>

#include "loom/cache.h"
#include "loom/sdk_core.hpp"

namespace loom::block_cache {

// Chained hashes of evicted blocks, to tell "evicted" from "never cached" misses. Bounded: a
// pool that churns would otherwise grow it without end; past the cap the oldest entries go, so a
// block evicted long ago (after `capacity` later evictions) is counted as never cached.
class EvictedHashes {
 public:
  explicit EvictedHashes(size_t capacity) : capacity_(capacity) {}
  void add(uint64_t hash) {
    if (capacity_ == 0 || !set_.insert(hash).second) return;
    order_.push_back(hash);
    if (order_.size() > capacity_) {
      set_.erase(order_.front());
      order_.pop_front();
    }
  }
  bool contains(uint64_t hash) const { return set_.count(hash) != 0; }

 private:
  size_t capacity_;
  std::unordered_set<uint64_t> set_;
  std::deque<uint64_t> order_;  // insertion order, oldest first
};

// Why a lookup's missed tokens missed (loom_cache_usage, 1.1).
enum class Miss { kPartialBlock, kNoMatch, kEvicted, kSaltMismatch };

// Cumulative prefix-cache counters: each lookup adds its query tokens, its hits, and all of its
// missed tokens under one reason, so hits + misses == queries.
struct PrefixStats {
  int64_t hit = 0, query = 0, partial_block = 0, no_match = 0, evicted = 0, salt_mismatch = 0;

  void add(int64_t query_tokens, int64_t hit_tokens, Miss why) {
    query += query_tokens;
    hit += hit_tokens;
    const int64_t missed = query_tokens - hit_tokens;
    switch (why) {
      case Miss::kPartialBlock: partial_block += missed; break;
      case Miss::kNoMatch: no_match += missed; break;
      case Miss::kEvicted: evicted += missed; break;
      case Miss::kSaltMismatch: salt_mismatch += missed; break;
    }
  }
  // The 1.0 fields always; the miss counters only when the caller's struct has them.
  void write(loom_cache_usage* out) const {
    out->prefix_hit_tokens = hit;
    out->prefix_query_tokens = query;
    if (!loom::sdk::covers(*out, &loom_cache_usage::prefix_miss_salt_mismatch_tokens)) return;
    out->prefix_miss_partial_block_tokens = partial_block;
    out->prefix_miss_no_match_tokens = no_match;
    out->prefix_miss_evicted_tokens = evicted;
    out->prefix_miss_salt_mismatch_tokens = salt_mismatch;
  }
};

}  // namespace loom::block_cache
