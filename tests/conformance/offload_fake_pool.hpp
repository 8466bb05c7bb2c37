// The pool a cache_offload tier copies from and to in the conformance tests: kNumBlocks blocks
// of kBytesPerBlock bytes behind the same copy-op signatures the engine hands a tier.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "loom/cache_offload.h"
#include "loom/sdk_core.hpp"

namespace loom::offload_test {

constexpr int64_t kBytesPerBlock = 40;  // [bytes_per_block]: deliberately not a power of two
constexpr int32_t kNumBlocks = 6;

// The pool the tier copies from and to: kNumBlocks blocks of kBytesPerBlock bytes.
struct FakePool {
  std::vector<std::vector<std::byte>> blocks =
      std::vector<std::vector<std::byte>>(kNumBlocks, std::vector<std::byte>(kBytesPerBlock));
  int32_t failing_block = -1;  // read_block/write_block of this block fail

  void fill(int32_t block, int seed) {
    for (int64_t i = 0; i < kBytesPerBlock; ++i)
      blocks[static_cast<size_t>(block)][static_cast<size_t>(i)] = static_cast<std::byte>((seed * 31 + i * 7) & 0xff);
  }
  std::vector<std::byte> pattern(int seed) const {
    FakePool p;
    p.fill(0, seed);
    return p.blocks[0];
  }

  static loom_status check(FakePool* pool, int32_t block, loom_error_buf* err) {
    if (block >= 0 && block < kNumBlocks && block != pool->failing_block) return LOOM_OK;
    sdk::write_error(err, "fake pool: block " + std::to_string(block) + " refused");
    return LOOM_ERR_INVALID_ARGUMENT;
  }
  static loom_status read(void* ctx, int32_t block, void* dst, loom_error_buf* err) {
    auto* pool = static_cast<FakePool*>(ctx);
    if (const loom_status s = check(pool, block, err); s != LOOM_OK) return s;
    std::memcpy(dst, pool->blocks[static_cast<size_t>(block)].data(), kBytesPerBlock);
    return LOOM_OK;
  }
  static loom_status write(void* ctx, int32_t block, const void* src, loom_error_buf* err) {
    auto* pool = static_cast<FakePool*>(ctx);
    if (const loom_status s = check(pool, block, err); s != LOOM_OK) return s;
    std::memcpy(pool->blocks[static_cast<size_t>(block)].data(), src, kBytesPerBlock);
    return LOOM_OK;
  }
};

// Create args over `pool` (1.1: with a fingerprint and a layout; the pointer must outlive them).
inline loom_cache_offload_create_args create_args(FakePool& pool, const char* fingerprint) {
  loom_cache_offload_create_args a{};
  a.struct_size = sizeof(a);
  a.copy.struct_size = sizeof(a.copy);
  a.copy.host_ctx = &pool;
  a.copy.bytes_per_block = kBytesPerBlock;
  a.copy.read_block = &FakePool::read;
  a.copy.write_block = &FakePool::write;
  a.model_fingerprint = fingerprint;
  a.kv_dtype = LOOM_DTYPE_F32;
  a.n_layers = 1;
  a.n_kv_heads = 1;
  a.head_dim = 5;
  a.block_size = 1;
  return a;
}

}  // namespace loom::offload_test
