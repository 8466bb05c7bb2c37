// cache_offload/host: a host-RAM tier for KV blocks. save() copies a pool block into a host
// chunk through the host's read_block, load() copies it back through write_block; the plugin
// never sees the pool itself. When `capacity` is full, save() evicts the least recently used
// entry (load counts as use). Calls are serialised by a mutex so the host may drive the tier
// from a copy thread as well as from the engine thread.
//
// Config: capacity = "1GiB" (a byte size string or an integer of bytes; default 1 GiB), which
// holds capacity / bytes_per_block entries. Host memory is taken lazily, one block-sized chunk at
// a time, and reused after drops and evictions.
#include <mutex>
#include <string>
#include <vector>

#include "host_block_store.hpp"
#include "loom/sdk.hpp"
#include "loom/sdk_config.hpp"

namespace {

using loom::host_offload::HostBlockStore;

struct HostOffloadConfig {
  int64_t capacity_bytes = int64_t{1} << 30;
};

class HostOffload {
 public:
  static const loom::sdk::ConfigSpec<HostOffloadConfig>& config_spec() {
    static const auto spec = loom::sdk::ConfigSpec<HostOffloadConfig>("cache_offload host")
                                 .bytes("capacity", &HostOffloadConfig::capacity_bytes,
                                        "host memory for offloaded KV blocks, e.g. \"1GiB\"");
    return spec;
  }

  HostOffload(const loom::sdk::Host& host, const loom_cache_offload_create_args& args, const HostOffloadConfig& cfg)
      : copy_(checked_copy_ops(args.copy)),
        capacity_bytes_(cfg.capacity_bytes),
        store_(copy_.bytes_per_block, max_entries(capacity_bytes_, copy_.bytes_per_block)) {
    host.info("up to ", store_.max_entries(), " blocks of ", copy_.bytes_per_block, " bytes (",
              capacity_bytes_, " bytes), allocated on use");
  }

  loom_status save(uint64_t key, int32_t block_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    std::byte* chunk = store_.insert(key);
    loom::sdk::ErrorBuffer err;
    const loom_status status = copy_.read_block(copy_.host_ctx, block_id, chunk, err.buf());
    if (status != LOOM_OK) {
      store_.erase(key);  // half-copied: a failed save leaves the key absent, never stale
      loom::sdk::check(status, err, "save: read_block " + std::to_string(block_id));
    }
    return LOOM_OK;
  }

  loom_status load(uint64_t key, int32_t block_id) {
    std::lock_guard<std::mutex> lock(mutex_);
    const std::byte* chunk = store_.find(key);
    if (chunk == nullptr) {
      throw loom::sdk::Error(LOOM_ERR_NOT_FOUND, "load: key " + std::to_string(key) + " is not stored");
    }
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(copy_.write_block(copy_.host_ctx, block_id, chunk, err.buf()), err,
                     "load: write_block " + std::to_string(block_id));
    return LOOM_OK;
  }

  loom_status contains(uint64_t key, int32_t* present) {
    if (present == nullptr) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "contains: present is NULL");
    std::lock_guard<std::mutex> lock(mutex_);
    *present = store_.contains(key) ? 1 : 0;
    return LOOM_OK;
  }

  loom_status drop(uint64_t key) {
    std::lock_guard<std::mutex> lock(mutex_);
    store_.erase(key);
    return LOOM_OK;
  }

  loom_status usage(loom_cache_offload_usage* out) {
    if (out == nullptr) throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "usage: out is NULL");
    std::lock_guard<std::mutex> lock(mutex_);
    out->capacity_bytes = capacity_bytes_;
    out->num_entries = store_.num_entries();
    out->used_bytes = store_.num_entries() * store_.bytes_per_block();
    return LOOM_OK;
  }

 private:
  static loom_kv_copy_ops checked_copy_ops(const loom_kv_copy_ops& copy) {
    if (copy.struct_size < sizeof(loom_kv_copy_ops) || copy.read_block == nullptr || copy.write_block == nullptr) {
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "cache_offload host: the copy ops are incomplete");
    }
    if (copy.bytes_per_block <= 0) {
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "cache_offload host: bytes_per_block must be positive, got " +
                                                            std::to_string(copy.bytes_per_block));
    }
    return copy;
  }

  static int64_t max_entries(int64_t capacity_bytes, int64_t bytes_per_block) {
    const int64_t n = capacity_bytes / bytes_per_block;
    if (n < 1) {
      throw loom::sdk::ConfigError("cache_offload host: capacity " + std::to_string(capacity_bytes) +
                                   " bytes holds no KV block of " + std::to_string(bytes_per_block) + " bytes");
    }
    return n;
  }

  loom_kv_copy_ops copy_;
  int64_t capacity_bytes_;
  std::mutex mutex_;
  HostBlockStore store_;
};

}  // namespace

LOOM_CACHE_OFFLOAD_PLUGIN(HostOffload, "host", "0.1.0",
                          "host-RAM tier for KV blocks: swap on preemption, LRU eviction at capacity");
