// The config table shared by the block-pool caches (paged, radix): pool size, block size, prefix
// caching and invariant checks, from the JSON text of the host's [cache] section.
#pragma once

#include <cstdint>
#include <string>

#include "loom/cache.h"

namespace loom::kv_pool_config {

struct Config {
  int64_t kv_memory = int64_t{64} << 20;  // bytes of K/V to hold, when num_blocks is not given
  int64_t num_blocks = 0;                 // explicit pool size; 0 = derive from kv_memory
  int32_t block_size = 16;                // tokens per block
  bool enable_prefix_caching = true;
  bool check_invariants = false;  // run the full consistency check after every mutating call
};

// "64MiB", "1.5GB", "512 KiB", "1048576" -> bytes (KiB = 1024, KB = 1000); -1 when not a size.
int64_t parse_byte_size(const std::string& text);

// Parses and checks the config; throws sdk::ConfigError listing every problem at once.
// `who` ("cache paged") starts every message.
Config parse_config(const char* config_json, const std::string& who);

// Throws sdk::Error(LOOM_ERR_UNSUPPORTED) unless the pool's kv_dtype is one this cache handles:
// f32, f16, bf16, int8, fp8_e4m3 (the cache only counts blocks; it never reads them).
void check_kv_dtype(const loom_cache_create_args& args, const std::string& who);

// The pool's block count: num_blocks as configured, or as many blocks as kv_memory holds at
// block_size * bytes_per_token + bytes_per_block_extra bytes each (capped at INT32_MAX).
int32_t pool_blocks(const loom_cache_create_args& args, const Config& cfg, const std::string& who);

}  // namespace loom::kv_pool_config
