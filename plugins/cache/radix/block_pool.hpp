// cache/radix: the block pool. Every block is in exactly one of three states:
//   free    -- refcount 0 and owned by no tree node; kept in an ordered set so the lowest id goes
//              out first (deterministic tables, easy to test);
//   used    -- refcount > 0: in the table of at least one live sequence (it may also be in the
//              tree);
//   cached  -- refcount 0 but owned by a tree node: its K/V may be reused, and the tree evicts it
//              (back to free) when take() needs room.
// The pool only counts; which cached block goes first is the tree's decision (LRU leaves).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "loom/sdk_core.hpp"

namespace loom::radix {

class BlockPool {
 public:
  explicit BlockPool(int32_t num_blocks)
      : ref_(static_cast<size_t>(num_blocks), 0), in_tree_(static_cast<size_t>(num_blocks), 0) {
    for (int32_t id = 0; id < num_blocks; ++id) free_.insert(free_.end(), id);
  }

  int32_t num_blocks() const { return static_cast<int32_t>(ref_.size()); }
  int32_t num_free() const { return static_cast<int32_t>(free_.size()); }
  int32_t num_used() const { return num_used_; }
  int32_t num_cached() const { return num_blocks() - num_free() - num_used(); }
  int32_t refcount(int32_t id) const { return ref_[idx(id)]; }
  bool in_tree(int32_t id) const { return in_tree_[idx(id)] != 0; }
  bool is_free(int32_t id) const { return free_.count(id) != 0; }

  // A new block with refcount 1: the lowest free id. Precondition: num_free() > 0 (the caller
  // evicts from the tree first).
  int32_t take() {
    if (free_.empty()) broken("take() with no free block");
    const int32_t id = *free_.begin();
    free_.erase(free_.begin());
    ref_[idx(id)] = 1;
    ++num_used_;
    return id;
  }
  // One more table holds the block (a prefix hit; the block is used or cached).
  void acquire(int32_t id) {
    if (ref_[idx(id)] == 0) {
      if (!in_tree(id)) broken("acquire of the free block " + std::to_string(id));
      ++num_used_;
    }
    ++ref_[idx(id)];
  }
  // One table fewer; at 0 the block becomes cached (in the tree) or free.
  void release(int32_t id) {
    if (ref_[idx(id)] <= 0) broken("release of the unreferenced block " + std::to_string(id));
    if (--ref_[idx(id)] > 0) return;
    --num_used_;
    if (!in_tree(id)) free_.insert(id);
  }
  // A tree node now owns the block (inserted at commit; the block is used).
  void enter_tree(int32_t id) {
    if (ref_[idx(id)] == 0 || in_tree(id)) broken("block " + std::to_string(id) + " entered the tree unreferenced or twice");
    in_tree_[idx(id)] = 1;
  }
  // Eviction: the tree drops an unreferenced block, which becomes free.
  void leave_tree(int32_t id) {
    if (ref_[idx(id)] != 0 || !in_tree(id)) broken("eviction of block " + std::to_string(id) + " that is referenced or not cached");
    in_tree_[idx(id)] = 0;
    free_.insert(id);
  }

  [[noreturn]] static void broken(const std::string& what) {
    throw sdk::Error(LOOM_ERR_INTERNAL, "cache radix: invariant broken: " + what);
  }

 private:
  static size_t idx(int32_t id) { return static_cast<size_t>(id); }

  std::vector<int32_t> ref_;
  std::vector<uint8_t> in_tree_;
  std::set<int32_t> free_;
  int32_t num_used_ = 0;
};

}  // namespace loom::radix
