// The config table shared by the block-pool caches (contiguous, paged, radix): pool size, block
// size, prefix caching and invariant checks, read with the SDK's config reader.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loom/cache.h"
#include "loom/sdk_config.hpp"

namespace loom::kv_pool_config {

struct Config {
  int64_t kv_memory = int64_t{64} << 20;  // bytes of K/V to hold, when num_blocks is not given
  int64_t num_blocks = 0;                 // explicit pool size; 0 = derive from kv_memory
  int32_t block_size = 16;                // tokens per block
  bool enable_prefix_caching = true;
  bool check_invariants = false;  // run the full consistency check after every mutating call
};

// The pool keys only (kv_memory, num_blocks, block_size), for a cache without prefix reuse.
// `who` ("cache contiguous") starts every message.
sdk::ConfigSpec<Config> pool_spec(const std::string& who);

// The pool keys plus enable_prefix_caching and check_invariants (paged, radix).
sdk::ConfigSpec<Config> block_cache_spec(const std::string& who);

// Whether to run the full consistency check after every change: always in debug builds, else
// as check_invariants says.
inline bool checks_invariants(const Config& cfg) {
#ifdef NDEBUG
  return cfg.check_invariants;
#else
  (void)cfg;
  return true;
#endif
}

// Throws sdk::Error(LOOM_ERR_UNSUPPORTED) unless the pool's kv_dtype is one this cache handles:
// f32, f16, bf16, int8, fp8_e4m3 (the cache only counts blocks; it never reads them).
void check_kv_dtype(const loom_cache_create_args& args, const std::string& who);

// The pool's block count: num_blocks as configured, or as many blocks as kv_memory holds at
// block_size * bytes_per_token + bytes_per_block_extra bytes each (capped at INT32_MAX).
int32_t pool_blocks(const loom_cache_create_args& args, const Config& cfg, const std::string& who);

// The windows of the create args' block-table groups (cache interface 1.5), one per group (0: full
// attention); one group without a window when the host asks for none. Throws
// sdk::Error(LOOM_ERR_INVALID_ARGUMENT) for groups without windows or a negative window.
std::vector<int32_t> group_windows(const loom_cache_create_args& args, const std::string& who);

// Whether a request of max_total_tokens could ever fit in a whole, empty pool of num_blocks blocks
// of block_size tokens; the reason names the pool's size.
sdk::Verdict pool_fits(int32_t max_total_tokens, int32_t num_blocks, int32_t block_size);

}  // namespace loom::kv_pool_config
