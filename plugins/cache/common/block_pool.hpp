// cache/paged: the block pool. Every block is in exactly one of three states:
//   free    -- refcount 0, no registered content; kept in an ordered set so the lowest id goes
//              out first (deterministic tables, easy to test);
//   used    -- refcount > 0: in the table of at least one live sequence;
//   cached  -- refcount 0 but registered under a prefix hash: its K/V may be reused, and it sits
//              in an LRU list (front = freed longest ago) from which take() evicts when no free
//              block is left.
// Registration stores the block's content key (parent hash, salt, token ids) beside the hash so
// a lookup verifies it: a 64-bit hash collision then cannot hand out someone else's K/V.
// For the miss counters the pool also counts registered blocks per content-only chain hash (is
// this prefix cached under any salt?) and remembers the hashes it evicted (bounded).
#pragma once

#include <cstdint>
#include <list>
#include <set>
#include <span>
#include <unordered_map>
#include <vector>

#include "block_hash.hpp"
#include "evicted_blocks.hpp"
#include "prefix_misses.hpp"

namespace loom::paged {

using block_cache::block_hash;
using block_cache::kContentRootHash;
using block_cache::kRootHash;

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks);

  int32_t num_blocks() const { return static_cast<int32_t>(blocks_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_cached() const { return static_cast<int32_t>(lru_.size()); }
  int32_t num_used() const { return num_used_; }
  // Blocks take() can hand out: free ones, then evictable cached ones.
  int32_t num_available() const { return num_free() + num_cached(); }
  int32_t refcount(int32_t id) const { return blocks_[static_cast<size_t>(id)].ref; }

  // A new block with refcount 1: the lowest free id, else the least recently freed cached block
  // (its registration dropped). Precondition: num_available() > 0.
  int32_t take();
  // One more reference to a block found by lookup(); a cached block leaves the LRU.
  void acquire(int32_t id);
  // One reference fewer; at 0 the block becomes cached (registered) or free (not registered).
  void release(int32_t id);

  // Registers a used block's content under hash (content: its content-only chain hash). Does
  // nothing (false) when the block already holds a registration or another block holds this hash
  // (the same prefix computed twice).
  bool register_block(int32_t id, uint64_t hash, uint64_t parent, uint64_t salt, uint64_t content,
                      std::span<const int32_t> tokens);
  // The block registered under hash with exactly this content, or -1.
  int32_t lookup(uint64_t hash, uint64_t parent, uint64_t salt, std::span<const int32_t> tokens) const;
  // Evicts up to n cached blocks now (least recently freed first), recording them like take()
  // does; they become free. Returns how many.
  int32_t evict_cached(int32_t n);
  // The registered blocks take() evicted since the last call (interface 1.4, for spilling).
  std::span<const block_cache::EvictedBlock> take_evicted() { return spilled_.take(); }
  // Whether a block registered under hash was evicted (within the bounded record).
  bool was_evicted(uint64_t hash) const { return evicted_.contains(hash); }
  // Whether some registered block, under any salt, ends a prefix with this content chain hash.
  bool content_cached(uint64_t content) const { return by_content_.count(content) != 0; }

  // Throws sdk::Error(LOOM_ERR_INTERNAL) naming the first broken invariant. expected_refs[b] is
  // the number of live tables holding block b.
  void check(const std::vector<int32_t>& expected_refs) const;

 private:
  struct Block {
    int32_t ref = 0;
    bool registered = false;
    uint64_t hash = 0, parent = 0, salt = 0, content = 0;
    std::vector<int32_t> tokens;         // content key, kept only while registered
    std::list<int32_t>::iterator lru{};  // valid while cached (ref == 0 and registered)
  };
  void unregister(Block& b);
  // Unregisters the least recently freed cached block, recording the eviction; returns its id.
  int32_t evict_front();

  std::vector<Block> blocks_;
  std::set<int32_t> free_;
  std::list<int32_t> lru_;
  std::unordered_map<uint64_t, int32_t> by_hash_;
  std::unordered_map<uint64_t, int32_t> by_content_;  // content chain hash -> registered blocks
  block_cache::EvictedHashes evicted_;
  block_cache::EvictedBlocks spilled_;
  int32_t num_used_ = 0;
};

}  // namespace loom::paged
