// The block-pool caches' config keys and pool sizing.
#include "kv_pool_config.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cmath>
#include <cstddef>
#include <utility>
#include <vector>

#include "loom/sdk_core.hpp"

namespace loom::kv_pool_config {

sdk::ConfigSpec<Config> pool_spec(const std::string& who) {
  return sdk::ConfigSpec<Config>(who)
      .bytes("kv_memory", &Config::kv_memory, "K/V memory to fill with blocks, e.g. \"64MiB\" (or set num_blocks)")
      .integer("num_blocks", &Config::num_blocks, "pool size in blocks (default: as many as kv_memory holds)", 1, INT32_MAX)
      .integer("block_size", &Config::block_size, "tokens per KV block", 1, 65536)
      .rule([](const Config&, const sdk::ConfigSpec<Config>::Given& given, std::vector<std::string>& problems) {
        if (given.count("kv_memory") != 0 && given.count("num_blocks") != 0)
          problems.push_back("set kv_memory or num_blocks, not both");
      });
}

sdk::ConfigSpec<Config> block_cache_spec(const std::string& who) {
  return pool_spec(who)
      .boolean("enable_prefix_caching", &Config::enable_prefix_caching, "reuse the K/V of shared prompt prefixes")
      .boolean("check_invariants", &Config::check_invariants,
               "check block accounting after every change (always on in debug builds)");
}

void check_kv_dtype(const loom_cache_create_args& args, const std::string& who) {
  switch (args.kv_dtype) {
    case LOOM_DTYPE_F32:
    case LOOM_DTYPE_F16:
    case LOOM_DTYPE_BF16:
    case LOOM_DTYPE_I8:
    case LOOM_DTYPE_FP8_E4M3: return;
    default:
      throw sdk::Error(LOOM_ERR_UNSUPPORTED, who + ": kv_dtype " + std::to_string(args.kv_dtype) +
                                                 " is not supported (f32, f16, bf16, int8, fp8_e4m3)");
  }
}

int32_t pool_blocks(const loom_cache_create_args& args, const Config& cfg, const std::string& who) {
  int64_t blocks = cfg.num_blocks;
  if (blocks == 0) {
    if (args.bytes_per_token <= 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, who + ": bytes_per_token must be positive");
    const bool has_extra = sdk::covers(args, &loom_cache_create_args::bytes_per_block_extra);
    const int64_t extra = has_extra ? std::max<int64_t>(0, args.bytes_per_block_extra) : 0;
    blocks = cfg.kv_memory / (static_cast<int64_t>(cfg.block_size) * args.bytes_per_token + extra);
    if (blocks < 1)
      throw sdk::ConfigError(who + ": kv_memory " + std::to_string(cfg.kv_memory) + " bytes holds no block of " +
                             std::to_string(cfg.block_size) + " tokens x " + std::to_string(args.bytes_per_token) +
                             " bytes per token" + (extra > 0 ? " + " + std::to_string(extra) + " bytes of scales" : ""));
  }
  return static_cast<int32_t>(std::min<int64_t>(blocks, INT32_MAX));
}

sdk::Verdict pool_fits(int32_t max_total_tokens, int32_t num_blocks, int32_t block_size) {
  const int64_t capacity = static_cast<int64_t>(num_blocks) * block_size;
  if (max_total_tokens <= capacity) return sdk::Verdict::yes();
  return sdk::Verdict::no("max_total_tokens " + std::to_string(max_total_tokens) + " exceeds the whole KV pool: " +
                          std::to_string(num_blocks) + " blocks x " + std::to_string(block_size) +
                          " tokens = " + std::to_string(capacity) + " tokens");
}

std::vector<int32_t> group_windows([[maybe_unused]] const loom_cache_create_args& args,
                                   [[maybe_unused]] const std::string& who) {
#if LOOM_CACHE_IFACE_MINOR < 5  // built against an older cache.h: no groups in the create args
  return {0};
#else
  // A host older than 1.5 passes a shorter struct: no groups.
  if (args.struct_size < offsetof(loom_cache_create_args, group_windows) + sizeof(args.group_windows)) return {0};
  if (args.n_groups <= 1) return {args.n_groups == 1 && args.group_windows != nullptr ? args.group_windows[0] : 0};
  if (args.group_windows == nullptr)
    throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT,
                     who + ": " + std::to_string(args.n_groups) + " block-table groups but no group_windows");
  std::vector<int32_t> w(args.group_windows, args.group_windows + args.n_groups);
  for (int32_t x : w)
    if (x < 0)
      throw sdk::Error(LOOM_ERR_INVALID_ARGUMENT, who + ": a group's window " + std::to_string(x) + " is negative");
  return w;
#endif
}

}  // namespace loom::kv_pool_config
