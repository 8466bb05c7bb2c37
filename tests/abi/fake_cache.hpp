// A small, exact KV-cache stand-in for scheduler tests: block_size tokens per block, num_blocks
// in all, one block count per sequence, no prefix reuse. Exposed through a real
// loom_cache_vtable so schedulers call it exactly as they call a cache plugin.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "loom/cache.h"
#include "loom/sdk_core.hpp"

namespace loom::test {

class FakeCache {
 public:
  FakeCache(int32_t num_blocks, int32_t block_size)
      : num_blocks_(num_blocks), block_size_(block_size) {}

  loom_cache_handle handle() { return loom_cache_handle{this, &kTable}; }
  int32_t free_blocks() const { return num_blocks_ - used_blocks(); }
  int32_t used_blocks() const {
    int32_t n = 0;
    for (const auto& [id, blocks] : held_) n += blocks;
    return n;
  }
  int32_t held(uint64_t id) const {
    auto it = held_.find(id);
    return it == held_.end() ? 0 : it->second;
  }

 private:
  int32_t blocks_for(int32_t tokens) const { return (tokens + block_size_ - 1) / block_size_; }
  static FakeCache& self(void* s) { return *static_cast<FakeCache*>(s); }

  static loom_status layout(void* s, loom_cache_layout* out, loom_error_buf*) {
    out->num_blocks = self(s).num_blocks_;
    out->block_size = self(s).block_size_;
    return LOOM_OK;
  }
  static loom_status fits(void* s, int32_t max_total, int32_t* ok, loom_error_buf* err) {
    const FakeCache& c = self(s);
    *ok = c.blocks_for(max_total) <= c.num_blocks_ ? 1 : 0;
    if (*ok == 0) {
      sdk::write_error(err, std::to_string(max_total) + " tokens need " +
                                std::to_string(c.blocks_for(max_total)) + " blocks, the pool has " +
                                std::to_string(c.num_blocks_));
    }
    return LOOM_OK;
  }
  static loom_status can_allocate(void* s, const loom_request_view* r, int32_t n, int32_t* ok,
                                  loom_error_buf*) {
    const FakeCache& c = self(s);
    const int32_t need = c.blocks_for(r->num_computed_tokens + n) - c.held(r->request_id);
    *ok = need <= c.free_blocks() ? 1 : 0;
    return LOOM_OK;
  }
  static loom_status allocate(void* s, const loom_request_view* r, int32_t n, int32_t* cached,
                              loom_error_buf* err) {
    FakeCache& c = self(s);
    const int32_t need = c.blocks_for(r->num_computed_tokens + n) - c.held(r->request_id);
    if (need > c.free_blocks()) {
      sdk::write_error(err, "allocate: out of blocks");
      return LOOM_ERR_OUT_OF_MEMORY;
    }
    c.held_[r->request_id] += need;
    *cached = 0;
    return LOOM_OK;
  }
  static loom_status append(void* s, const loom_request_view* r, int32_t n, loom_error_buf* err) {
    FakeCache& c = self(s);
    if (c.held_.count(r->request_id) == 0) {
      sdk::write_error(err, "append: unknown sequence " + std::to_string(r->request_id));
      return LOOM_ERR_NOT_FOUND;
    }
    const int32_t need = c.blocks_for(r->num_computed_tokens + n) - c.held(r->request_id);
    if (need > c.free_blocks()) {
      sdk::write_error(err, "append: out of blocks");
      return LOOM_ERR_OUT_OF_MEMORY;
    }
    if (need > 0) c.held_[r->request_id] += need;
    return LOOM_OK;
  }
  static loom_status free_seq(void* s, uint64_t id, loom_error_buf*) {
    self(s).held_.erase(id);
    return LOOM_OK;
  }
  static loom_status block_table(void*, uint64_t, loom_block_list* out, loom_error_buf*) {
    *out = loom_block_list{nullptr, 0};
    return LOOM_OK;
  }
  static loom_status usage(void* s, loom_cache_usage* out, loom_error_buf*) {
    const FakeCache& c = self(s);
    out->total_blocks = c.num_blocks_;
    out->free_blocks = c.free_blocks();
    out->used_blocks = c.used_blocks();
    out->cached_blocks = 0;
    out->num_seqs = static_cast<int32_t>(c.held_.size());
    return LOOM_OK;
  }

  static constexpr loom_cache_vtable kTable = {sizeof(loom_cache_vtable),
                                               &layout,
                                               &fits,
                                               nullptr,
                                               &can_allocate,
                                               &allocate,
                                               &append,
                                               nullptr,
                                               &free_seq,
                                               &block_table,
                                               &usage};

  int32_t num_blocks_;
  int32_t block_size_;
  std::map<uint64_t, int32_t> held_;  // request id -> blocks held
};

}  // namespace loom::test
