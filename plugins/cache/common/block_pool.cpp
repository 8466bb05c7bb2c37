// cache/paged: block pool states, LRU eviction and hash registration (see block_pool.hpp).
#include "block_pool.hpp"

#include <algorithm>
#include <string>

#include "loom/sdk_core.hpp"

namespace loom::paged {
namespace {

[[noreturn]] void broken(const std::string& what) {
  throw sdk::Error(LOOM_ERR_INTERNAL, "cache paged: invariant broken: " + what);
}

}  // namespace

// The eviction record keeps the last 4 pools' worth of evicted hashes: enough to explain the
// misses of prompts that come back after a few turnovers of the pool, and bounded.
BlockPool::BlockPool(int32_t num_blocks)
    : blocks_(static_cast<size_t>(num_blocks)),
      evicted_(4 * static_cast<size_t>(num_blocks)),
      spilled_(static_cast<size_t>(num_blocks)) {
  for (int32_t id = 0; id < num_blocks; ++id) free_.insert(free_.end(), id);
}

int32_t BlockPool::take() {
  int32_t id;
  if (!free_.empty()) {
    id = *free_.begin();
    free_.erase(free_.begin());
  } else if (!lru_.empty()) {
    id = evict_front();
  } else {
    throw sdk::Error(LOOM_ERR_INTERNAL, "cache paged: take() with no free or cached block");
  }
  blocks_[static_cast<size_t>(id)].ref = 1;
  ++num_used_;
  return id;
}

int32_t BlockPool::evict_front() {
  const int32_t id = lru_.front();
  lru_.pop_front();
  Block& b = blocks_[static_cast<size_t>(id)];
  evicted_.add(b.hash);
  spilled_.add(id, static_cast<int32_t>(b.tokens.size()), b.hash, b.salt);
  unregister(b);
  return id;
}

int32_t BlockPool::evict_cached(int32_t n) {
  int32_t done = 0;
  for (; done < n && !lru_.empty(); ++done) free_.insert(evict_front());
  return done;
}

void BlockPool::acquire(int32_t id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.ref == 0) {
    if (!b.registered) broken("acquire of the free block " + std::to_string(id));
    lru_.erase(b.lru);
    ++num_used_;
  }
  ++b.ref;
}

void BlockPool::release(int32_t id) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.ref <= 0) broken("release of the unreferenced block " + std::to_string(id));
  if (--b.ref > 0) return;
  --num_used_;
  if (b.registered) {
    b.lru = lru_.insert(lru_.end(), id);
  } else {
    free_.insert(id);
  }
}

bool BlockPool::register_block(int32_t id, uint64_t hash, uint64_t parent, uint64_t salt, uint64_t content,
                               std::span<const int32_t> tokens) {
  Block& b = blocks_[static_cast<size_t>(id)];
  if (b.registered || by_hash_.count(hash) != 0) return false;
  b.registered = true;
  b.hash = hash;
  b.parent = parent;
  b.salt = salt;
  b.content = content;
  ++by_content_[content];
  b.tokens.assign(tokens.begin(), tokens.end());
  by_hash_.emplace(hash, id);
  return true;
}

int32_t BlockPool::lookup(uint64_t hash, uint64_t parent, uint64_t salt, std::span<const int32_t> tokens) const {
  const auto it = by_hash_.find(hash);
  if (it == by_hash_.end()) return -1;
  const Block& b = blocks_[static_cast<size_t>(it->second)];
  const bool same = b.parent == parent && b.salt == salt &&
                    std::equal(b.tokens.begin(), b.tokens.end(), tokens.begin(), tokens.end());
  return same ? it->second : -1;
}

void BlockPool::unregister(Block& b) {
  by_hash_.erase(b.hash);
  if (const auto c = by_content_.find(b.content); c != by_content_.end() && --c->second == 0) by_content_.erase(c);
  b.registered = false;
  b.hash = b.parent = b.salt = b.content = 0;
  b.tokens.clear();
  b.tokens.shrink_to_fit();
}

void BlockPool::check(const std::vector<int32_t>& expected_refs) const {
  if (expected_refs.size() != blocks_.size()) broken("expected_refs has the wrong size");
  std::vector<uint8_t> in_lru(blocks_.size(), 0);
  for (int32_t id : lru_) {
    if (in_lru[static_cast<size_t>(id)]++) broken("block " + std::to_string(id) + " twice in the LRU");
  }
  int32_t used = 0, registered = 0;
  for (size_t i = 0; i < blocks_.size(); ++i) {
    const Block& b = blocks_[i];
    const std::string name = "block " + std::to_string(i);
    if (b.ref != expected_refs[i])
      broken(name + " has refcount " + std::to_string(b.ref) + " but is in " + std::to_string(expected_refs[i]) +
             " tables");
    const bool is_free = free_.count(static_cast<int32_t>(i)) != 0;
    const bool is_cached = in_lru[i] != 0;
    if (b.ref > 0) {
      ++used;
      if (is_free || is_cached) broken(name + " is referenced but also free or cached");
    } else if (is_free == is_cached || is_cached != b.registered) {
      broken(name + " is unreferenced but not exactly one of free (unregistered) or cached (registered)");
    }
    if (b.registered) {
      ++registered;
      const auto it = by_hash_.find(b.hash);
      if (it == by_hash_.end() || it->second != static_cast<int32_t>(i)) broken(name + " is registered under a hash the map does not give back");
    }
  }
  if (used != num_used_) broken("used count " + std::to_string(num_used_) + " != " + std::to_string(used));
  if (registered != static_cast<int32_t>(by_hash_.size())) broken("the hash map holds unregistered blocks");
  int32_t by_content = 0;
  for (const auto& [content, n] : by_content_) by_content += n;
  if (by_content != registered) broken("the content-hash counts disagree with the registered blocks");
  if (num_free() + num_cached() + num_used_ != num_blocks()) broken("free + cached + used != total");
}

}  // namespace loom::paged
