// cache_offload/disk: the in-memory index of block files (see disk_index.hpp).
#include "disk_index.hpp"

namespace loom::disk_offload {

bool DiskIndex::touch(uint64_t key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  lru_.splice(lru_.end(), lru_, it->second.at);
  return true;
}

void DiskIndex::insert(uint64_t key, int64_t bytes) {
  erase(key);
  lru_.push_back(key);
  entries_.emplace(key, Entry{bytes, std::prev(lru_.end())});
  used_ += bytes;
}

bool DiskIndex::erase(uint64_t key) {
  const auto it = entries_.find(key);
  if (it == entries_.end()) return false;
  used_ -= it->second.bytes;
  lru_.erase(it->second.at);
  entries_.erase(it);
  return true;
}

std::vector<uint64_t> DiskIndex::make_room(int64_t bytes) {
  std::vector<uint64_t> out;
  while (!lru_.empty() && used_ + reserved_ + bytes > capacity_) {
    const uint64_t key = lru_.front();
    erase(key);
    out.push_back(key);
  }
  return out;
}

}  // namespace loom::disk_offload
