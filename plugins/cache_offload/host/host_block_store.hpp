// A bounded store of fixed-size host buffers keyed by uint64, least-recently-used first out.
//
// Memory: every entry lives in a slot that owns one chunk of bytes_per_block bytes. Slots are
// made lazily (the store costs nothing until used) up to max_entries and never freed: a dropped
// entry's slot goes to a free list and the next insert reuses its chunk, so once the store has
// warmed up, inserting allocates no buffer memory (only the key index may allocate a node).
//
// Recency: slots form a doubly linked list through indices, most recently used at the head.
// insert() and find() count as use; contains() does not (a probe must not keep an entry alive).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace loom::host_offload {

class HostBlockStore {
 public:
  // max_entries >= 1 and bytes_per_block >= 1 (the caller checked the config).
  HostBlockStore(int64_t bytes_per_block, int64_t max_entries);

  // The chunk to fill for `key`, which becomes the most recently used entry: the key's own chunk
  // when present, else a free chunk, else a new one while under max_entries, else the least
  // recently used entry's (that entry is evicted). Never returns NULL.
  std::byte* insert(uint64_t key);
  // The key's chunk, marked most recently used; NULL when absent.
  const std::byte* find(uint64_t key);
  bool contains(uint64_t key) const { return index_.count(key) != 0; }
  // Removes the entry; false when absent.
  bool erase(uint64_t key);

  int64_t bytes_per_block() const { return bytes_per_block_; }
  int64_t max_entries() const { return max_entries_; }
  int64_t num_entries() const { return static_cast<int64_t>(index_.size()); }
  int64_t num_evictions() const { return num_evictions_; }
  int64_t allocated_chunks() const { return static_cast<int64_t>(slots_.size()); }

 private:
  static constexpr int64_t kNone = -1;
  struct Slot {
    uint64_t key = 0;
    int64_t prev = kNone;  // toward the head (more recent)
    int64_t next = kNone;  // toward the tail (less recent)
    std::unique_ptr<std::byte[]> data;  // [bytes_per_block]
  };

  void unlink(int64_t slot);
  void push_front(int64_t slot);
  int64_t take_slot();  // a slot not in the list: free, new, or the evicted tail

  int64_t bytes_per_block_;
  int64_t max_entries_;
  std::vector<Slot> slots_;                     // [allocated_chunks]
  std::vector<int64_t> free_;                   // slots holding no entry
  std::unordered_map<uint64_t, int64_t> index_; // key -> slot
  int64_t head_ = kNone;                        // most recently used
  int64_t tail_ = kNone;                        // least recently used: evicted first
  int64_t num_evictions_ = 0;
};

}  // namespace loom::host_offload
