#include "host_block_store.hpp"

namespace loom::host_offload {

HostBlockStore::HostBlockStore(int64_t bytes_per_block, int64_t max_entries)
    : bytes_per_block_(bytes_per_block), max_entries_(max_entries) {}

void HostBlockStore::unlink(int64_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  if (s.prev != kNone) slots_[static_cast<size_t>(s.prev)].next = s.next; else head_ = s.next;
  if (s.next != kNone) slots_[static_cast<size_t>(s.next)].prev = s.prev; else tail_ = s.prev;
  s.prev = s.next = kNone;
}

void HostBlockStore::push_front(int64_t slot) {
  Slot& s = slots_[static_cast<size_t>(slot)];
  s.prev = kNone;
  s.next = head_;
  if (head_ != kNone) slots_[static_cast<size_t>(head_)].prev = slot;
  head_ = slot;
  if (tail_ == kNone) tail_ = slot;
}

int64_t HostBlockStore::take_slot() {
  if (!free_.empty()) {
    const int64_t slot = free_.back();
    free_.pop_back();
    return slot;
  }
  if (static_cast<int64_t>(slots_.size()) < max_entries_) {
    Slot s;
    // Uninitialised on purpose: the caller overwrites the whole chunk before anyone reads it.
    s.data = std::make_unique_for_overwrite<std::byte[]>(static_cast<size_t>(bytes_per_block_));
    slots_.push_back(std::move(s));
    return static_cast<int64_t>(slots_.size()) - 1;
  }
  // Full: the least recently used entry gives up its chunk.
  const int64_t slot = tail_;
  unlink(slot);
  index_.erase(slots_[static_cast<size_t>(slot)].key);
  ++num_evictions_;
  return slot;
}

std::byte* HostBlockStore::insert(uint64_t key) {
  int64_t slot;
  if (auto it = index_.find(key); it != index_.end()) {
    slot = it->second;
    unlink(slot);
  } else {
    slot = take_slot();
    slots_[static_cast<size_t>(slot)].key = key;
    index_.emplace(key, slot);
  }
  push_front(slot);
  return slots_[static_cast<size_t>(slot)].data.get();
}

const std::byte* HostBlockStore::find(uint64_t key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return nullptr;
  unlink(it->second);
  push_front(it->second);
  return slots_[static_cast<size_t>(it->second)].data.get();
}

bool HostBlockStore::erase(uint64_t key) {
  const auto it = index_.find(key);
  if (it == index_.end()) return false;
  unlink(it->second);
  free_.push_back(it->second);
  index_.erase(it);
  return true;
}

}  // namespace loom::host_offload
