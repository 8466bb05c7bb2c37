// The cache_offload skeleton: a second KV tier in host RAM, one copy per saved block.
#include "tools/plugin/skeleton.hpp"

namespace loom::tools {

SkeletonKind cache_offload_skeleton() {
  SkeletonKind k;
  k.class_header = R"skel(
// Keeps saved blocks in host memory, up to kCapacityBytes; block contents move only through
// the host's copy functions (args.copy), never by touching the pool.
class @CLASS@ {
 public:
  static constexpr int64_t kCapacityBytes = 64ll << 20;

  @CLASS@(const loom::sdk::Host&, const loom_cache_offload_create_args& args, std::string_view config)
      : copy_(args.copy) {
    @IDENT@_plugin::refuse_config_keys(config);
    if (copy_.bytes_per_block <= 0 || copy_.read_block == nullptr || copy_.write_block == nullptr)
      throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "cache_offload @NAME@: the host gave no copy functions");
  }

  loom_status save(uint64_t key, int32_t block_id) {
    if (entries_.count(key) == 0 && used_bytes() + copy_.bytes_per_block > kCapacityBytes)
      throw loom::sdk::Error(LOOM_ERR_OUT_OF_MEMORY, "cache_offload @NAME@: the tier is full");
    std::vector<unsigned char> bytes(static_cast<size_t>(copy_.bytes_per_block));
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(copy_.read_block(copy_.host_ctx, block_id, bytes.data(), err.buf()), err, "read_block");
    entries_[key] = std::move(bytes);
    return LOOM_OK;
  }

  loom_status load(uint64_t key, int32_t block_id) {
    auto it = entries_.find(key);
    if (it == entries_.end()) return LOOM_ERR_NOT_FOUND;
    loom::sdk::ErrorBuffer err;
    loom::sdk::check(copy_.write_block(copy_.host_ctx, block_id, it->second.data(), err.buf()), err, "write_block");
    return LOOM_OK;
  }

  loom_status contains(uint64_t key, int32_t* present) {
    *present = entries_.count(key) != 0 ? 1 : 0;
    return LOOM_OK;
  }

  loom_status drop(uint64_t key) {
    entries_.erase(key);
    return LOOM_OK;
  }

  loom_status usage(loom_cache_offload_usage* out) {
    out->capacity_bytes = kCapacityBytes;
    out->used_bytes = used_bytes();
    out->num_entries = static_cast<int64_t>(entries_.size());
    return LOOM_OK;
  }

 private:
  int64_t used_bytes() const { return static_cast<int64_t>(entries_.size()) * copy_.bytes_per_block; }

  loom_kv_copy_ops copy_;
  std::map<uint64_t, std::vector<unsigned char>> entries_;  // key -> one block's bytes
};
)skel";
  k.test_body = R"skel(    // A fake pool of 2 blocks of 4 bytes, copied by the "host" functions below.
    static unsigned char pool[2][4] = {{1, 2, 3, 4}, {0, 0, 0, 0}};
    loom_cache_offload_create_args args{};
    args.struct_size = sizeof(args);
    args.copy.struct_size = sizeof(args.copy);
    args.copy.bytes_per_block = 4;
    args.copy.read_block = [](void*, int32_t block, void* dst, loom_error_buf*) {
      std::memcpy(dst, pool[block], 4);
      return LOOM_OK;
    };
    args.copy.write_block = [](void*, int32_t block, const void* src, loom_error_buf*) {
      std::memcpy(pool[block], src, 4);
      return LOOM_OK;
    };
    @CLASS@ plugin(host, args, "{}");
    check(plugin.save(42, 0) == LOOM_OK, "save block 0 under key 42");
    int32_t present = 0;
    check(plugin.contains(42, &present) == LOOM_OK && present == 1, "key 42 is stored");
    check(plugin.load(42, 1) == LOOM_OK && pool[1][0] == 1 && pool[1][3] == 4, "load restores the bytes into block 1");
    check(plugin.load(7, 1) == LOOM_ERR_NOT_FOUND, "an absent key is LOOM_ERR_NOT_FOUND");
    loom_cache_offload_usage usage{};
    usage.struct_size = sizeof(usage);
    check(plugin.usage(&usage) == LOOM_OK && usage.num_entries == 1 && usage.used_bytes == 4, "one entry of 4 bytes");
    check(plugin.drop(42) == LOOM_OK && plugin.contains(42, &present) == LOOM_OK && present == 0, "drop forgets it");)skel";
  return k;
}

}  // namespace loom::tools
