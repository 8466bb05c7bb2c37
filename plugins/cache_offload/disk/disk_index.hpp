// cache_offload/disk: which keys are on disk, their sizes, and their recency (least recently
// used first out). Sizes count against the capacity from the moment a write reserves its room,
// so writes in flight never let the directory pass `capacity`. Not thread-safe: the plugin's
// mutex guards it.
#pragma once

#include <cstdint>
#include <list>
#include <unordered_map>
#include <vector>

namespace loom::disk_offload {

class DiskIndex {
 public:
  explicit DiskIndex(int64_t capacity_bytes) : capacity_(capacity_bytes) {}

  bool contains(uint64_t key) const { return entries_.count(key) != 0; }
  // Marks key most recently used; false when absent.
  bool touch(uint64_t key);
  // Adds (or replaces) key as the most recently used entry of `bytes`.
  void insert(uint64_t key, int64_t bytes);
  bool erase(uint64_t key);
  // The least recently used keys to remove so that `bytes` more fit within capacity (they are
  // removed from the index here; the caller deletes their files). Empty when nothing is needed.
  std::vector<uint64_t> make_room(int64_t bytes);
  void reserve(int64_t bytes) { reserved_ += bytes; }
  void unreserve(int64_t bytes) { reserved_ -= bytes; }

  int64_t capacity() const { return capacity_; }
  int64_t used_bytes() const { return used_; }
  int64_t num_entries() const { return static_cast<int64_t>(entries_.size()); }

 private:
  struct Entry {
    int64_t bytes;
    std::list<uint64_t>::iterator at;  // in lru_
  };
  int64_t capacity_;
  int64_t used_ = 0;      // bytes of indexed files
  int64_t reserved_ = 0;  // bytes of writes in flight
  std::list<uint64_t> lru_;  // front = least recently used
  std::unordered_map<uint64_t, Entry> entries_;
};

}  // namespace loom::disk_offload
