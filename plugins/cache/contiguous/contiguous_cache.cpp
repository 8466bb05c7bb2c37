// cache/contiguous: each sequence gets, at allocate, one contiguous run of KV blocks covering its
// max_total_tokens (first fit), so its K/V is one contiguous stretch of the pool.
//
// The simplest correct KV cache, and the baseline the paged caches are measured against: no
// fragmentation inside a sequence, but a reservation for the worst case (external fragmentation
// and unused tails). Invariants: every block is either free or in exactly one sequence's run;
// used blocks == sum of run lengths; append never moves a run.
#include <algorithm>
#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

#include "common/kv_pool_config.hpp"
#include "loom/cache.h"
#include "loom/sdk.hpp"

namespace {

using loom::sdk::Error;
namespace kv_pool_config = loom::kv_pool_config;

class ContiguousCache {
 public:
  static constexpr const char* kLabel = "cache contiguous";

  // The block-pool keys without prefix caching: kv_memory, num_blocks, block_size.
  static const loom::sdk::ConfigSpec<kv_pool_config::Config>& config_spec() {
    static const auto spec = kv_pool_config::pool_spec(kLabel);
    return spec;
  }

  ContiguousCache(const loom::sdk::Host&, const loom_cache_create_args& args, const kv_pool_config::Config& cfg)
      : block_size_(cfg.block_size) {
    kv_pool_config::check_kv_dtype(args, kLabel);  // the cache only counts blocks: any pool dtype will do
    used_.assign(static_cast<size_t>(kv_pool_config::pool_blocks(args, cfg, kLabel)), 0);
  }

  int32_t num_blocks() const { return static_cast<int32_t>(used_.size()); }
  int32_t block_size() const { return block_size_; }

  loom_cache_layout layout() const { return {sizeof(loom_cache_layout), num_blocks(), block_size_}; }

  loom::sdk::Verdict fits(int32_t max_total_tokens) const {
    return kv_pool_config::pool_fits(max_total_tokens, num_blocks(), block_size_);
  }

  bool can_allocate(const loom_request_view& req, int32_t num_new_tokens) const {
    const int64_t need = static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
    auto it = seqs_.find(req.request_id);
    if (it != seqs_.end()) return need <= capacity_of(it->second);
    return find_run(blocks_for(req, num_new_tokens)) >= 0;
  }

  void allocate(const loom_request_view& req, int32_t num_new_tokens, int32_t* num_cached_tokens) {
    if (seqs_.count(req.request_id) != 0)
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "cache contiguous: request " + std::to_string(req.request_id) + " already holds blocks");
    const int32_t n = blocks_for(req, num_new_tokens);
    const int32_t first = find_run(n);
    if (first < 0)
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache contiguous: no free run of " + std::to_string(n) +
                                              " contiguous blocks (" + std::to_string(num_free()) + " of " +
                                              std::to_string(num_blocks()) + " free)");
    Seq seq;
    seq.tokens = req.num_computed_tokens + num_new_tokens;
    for (int32_t b = first; b < first + n; ++b) {
      used_[static_cast<size_t>(b)] = 1;
      seq.blocks.push_back(b);
    }
    num_used_ += n;
    seqs_.emplace(req.request_id, std::move(seq));
    if (num_cached_tokens != nullptr) *num_cached_tokens = 0;  // no prefix reuse
  }

  void append(const loom_request_view& req, int32_t num_new_tokens) {
    auto it = seqs_.find(req.request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache contiguous: request " + std::to_string(req.request_id) + " holds no blocks");
    const int64_t need = static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens;
    if (need > capacity_of(it->second))
      throw Error(LOOM_ERR_OUT_OF_MEMORY, "cache contiguous: request " + std::to_string(req.request_id) + " needs " +
                                              std::to_string(need) + " tokens, beyond its reservation of " +
                                              std::to_string(capacity_of(it->second)));
    if (need > it->second.tokens) it->second.tokens = static_cast<int32_t>(need);
  }

  // Interface 1.3: the run is reserved for max_total_tokens, so trimming only lowers the count of
  // tokens held; no block moves.
  void trim(const loom_request_view& req, int32_t num_tokens) {
    auto it = seqs_.find(req.request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache contiguous: request " + std::to_string(req.request_id) + " holds no blocks");
    if (num_tokens < 0 || num_tokens > it->second.tokens)
      throw Error(LOOM_ERR_INVALID_ARGUMENT, "cache contiguous: cannot trim request " + std::to_string(req.request_id) +
                                                 " to " + std::to_string(num_tokens) + " of its " +
                                                 std::to_string(it->second.tokens) + " tokens");
    it->second.tokens = num_tokens;
  }

  void free(uint64_t request_id) {
    auto it = seqs_.find(request_id);
    if (it == seqs_.end()) return;
    for (int32_t b : it->second.blocks) used_[static_cast<size_t>(b)] = 0;
    num_used_ -= static_cast<int32_t>(it->second.blocks.size());
    seqs_.erase(it);
  }

  loom_block_list block_table(uint64_t request_id) const {
    auto it = seqs_.find(request_id);
    if (it == seqs_.end())
      throw Error(LOOM_ERR_NOT_FOUND, "cache contiguous: request " + std::to_string(request_id) + " holds no blocks");
    return loom_block_list{it->second.blocks.data(), static_cast<int32_t>(it->second.blocks.size())};
  }

  void usage(loom_cache_usage* out) const {
    out->total_blocks = num_blocks();
    out->used_blocks = num_used_;
    out->free_blocks = num_free();
    out->cached_blocks = 0;
    out->num_seqs = static_cast<int32_t>(seqs_.size());
    out->prefix_hit_tokens = 0;
    out->prefix_query_tokens = 0;
    // 1.1 miss counters: no prefix caching, so no lookups and no misses. Written only when the
    // caller's struct is new enough to have them.
    if (loom::sdk::covers(*out, &loom_cache_usage::prefix_miss_salt_mismatch_tokens)) {
      out->prefix_miss_partial_block_tokens = 0;
      out->prefix_miss_no_match_tokens = 0;
      out->prefix_miss_evicted_tokens = 0;
      out->prefix_miss_salt_mismatch_tokens = 0;
    }
  }

 private:
  struct Seq {
    std::vector<int32_t> blocks;  // the run: first, first + 1, ...
    int32_t tokens = 0;           // tokens the sequence holds so far
  };

  int64_t capacity_of(const Seq& s) const { return static_cast<int64_t>(s.blocks.size()) * block_size_; }
  int32_t num_free() const { return num_blocks() - num_used_; }

  // The reservation covers the request's whole life (max_total_tokens), or more if asked.
  int32_t blocks_for(const loom_request_view& req, int32_t num_new_tokens) const {
    const int64_t tokens = std::max<int64_t>(req.max_total_tokens,
                                             static_cast<int64_t>(req.num_computed_tokens) + num_new_tokens);
    return static_cast<int32_t>(std::max<int64_t>(1, (tokens + block_size_ - 1) / block_size_));
  }

  // First block of the lowest run of n free blocks, or -1.
  int32_t find_run(int32_t n) const {
    int32_t run = 0;
    for (int32_t b = 0; b < num_blocks(); ++b) {
      run = used_[static_cast<size_t>(b)] ? 0 : run + 1;
      if (run == n) return b - n + 1;
    }
    return -1;
  }

  int32_t block_size_;
  std::vector<uint8_t> used_;  // [num_blocks] 1 when inside some sequence's run
  int32_t num_used_ = 0;
  std::unordered_map<uint64_t, Seq> seqs_;
};

}  // namespace

// No match_prefix/commit (no prefix reuse) and no fork (a contiguous run cannot share blocks).
LOOM_CACHE_PLUGIN(ContiguousCache, "contiguous", "0.1.0",
                  "one contiguous run of KV blocks per sequence, reserved at admission (first fit)");
