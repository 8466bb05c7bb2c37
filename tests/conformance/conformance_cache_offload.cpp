// Cache-offload conformance: every cache_offload plugin against a fake pool of a few blocks,
// through the same copy ops the engine hands it. A tier must give back exactly the bytes it was
// given, answer NOT_FOUND for what it does not hold, account its use, replace an entry saved
// again under the same key, evict least recently used first when `capacity` is full (a load is
// a use), leave no entry behind a failed copy, and refuse a bad config naming the key.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "loom/cache_offload.h"
#include "loom/sdk_core.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

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

class CacheOffloadConformance : public ::testing::TestWithParam<std::string> {
 protected:
  // Creates the plugin over pool_ (nullptr + skip when it cannot run here).
  std::unique_ptr<LoadedPlugin> open(const std::string& config = "{}") {
    loom_cache_offload_create_args a{};
    a.struct_size = sizeof(a);
    a.copy.struct_size = sizeof(a.copy);
    a.copy.host_ctx = &pool_;
    a.copy.bytes_per_block = kBytesPerBlock;
    a.copy.read_block = &FakePool::read;
    a.copy.write_block = &FakePool::write;
    return conformance::create_or_skip(host_, LOOM_KIND_CACHE_OFFLOAD, GetParam(), &a, &skip_, config);
  }
  static void save(const LoadedPlugin& p, uint64_t key, int32_t block) {
    p.call("save", &loom_cache_offload_vtable::save, key, block);
  }
  static void load(const LoadedPlugin& p, uint64_t key, int32_t block) {
    p.call("load", &loom_cache_offload_vtable::load, key, block);
  }
  static bool contains(const LoadedPlugin& p, uint64_t key) {
    int32_t present = -1;
    p.call("contains", &loom_cache_offload_vtable::contains, key, &present);
    EXPECT_TRUE(present == 0 || present == 1);
    return present == 1;
  }
  static loom_cache_offload_usage usage(const LoadedPlugin& p) {
    loom_cache_offload_usage u{};
    u.struct_size = sizeof(u);
    p.call("usage", &loom_cache_offload_vtable::usage, &u);
    return u;
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  FakePool pool_;
  std::string skip_;
};

TEST_P(CacheOffloadConformance, RoundTripIsByteExact) {
  const auto p = open();
  if (!p) GTEST_SKIP() << skip_;
  pool_.fill(1, 11);
  pool_.fill(2, 22);
  save(*p, 100, 1);
  save(*p, 200, 2);
  pool_.fill(1, 99);  // the pool block is reused after the save: the tier keeps its own copy
  load(*p, 100, 4);
  load(*p, 200, 5);
  EXPECT_EQ(pool_.blocks[4], pool_.pattern(11));
  EXPECT_EQ(pool_.blocks[5], pool_.pattern(22));
  load(*p, 100, 4);  // loading does not consume the entry
  EXPECT_EQ(pool_.blocks[4], pool_.pattern(11));
}

TEST_P(CacheOffloadConformance, ContainsDropAndNotFound) {
  const auto p = open();
  if (!p) GTEST_SKIP() << skip_;
  EXPECT_FALSE(contains(*p, 7));
  std::string message;
  EXPECT_EQ(p->try_call(&message, &loom_cache_offload_vtable::load, uint64_t{7}, int32_t{0}), LOOM_ERR_NOT_FOUND);
  EXPECT_FALSE(message.empty()) << "a refusal must say why";
  pool_.fill(0, 5);
  save(*p, 7, 0);
  EXPECT_TRUE(contains(*p, 7));
  EXPECT_FALSE(contains(*p, 8));
  p->call("drop", &loom_cache_offload_vtable::drop, uint64_t{7});
  EXPECT_FALSE(contains(*p, 7));
  EXPECT_EQ(p->try_call(nullptr, &loom_cache_offload_vtable::load, uint64_t{7}, int32_t{0}), LOOM_ERR_NOT_FOUND);
  p->call("drop absent", &loom_cache_offload_vtable::drop, uint64_t{7});  // not an error
  p->call("drop never saved", &loom_cache_offload_vtable::drop, uint64_t{12345});
}

TEST_P(CacheOffloadConformance, UsageCountsEntries) {
  const auto p = open(R"({"capacity": "1MiB"})");
  if (!p) GTEST_SKIP() << skip_;
  loom_cache_offload_usage u = usage(*p);
  EXPECT_EQ(u.capacity_bytes, 1 << 20);
  EXPECT_EQ(u.used_bytes, 0);
  EXPECT_EQ(u.num_entries, 0);
  for (uint64_t key = 1; key <= 3; ++key) save(*p, key, static_cast<int32_t>(key));
  u = usage(*p);
  EXPECT_EQ(u.num_entries, 3);
  EXPECT_EQ(u.used_bytes, 3 * kBytesPerBlock);
  p->call("drop", &loom_cache_offload_vtable::drop, uint64_t{2});
  u = usage(*p);
  EXPECT_EQ(u.num_entries, 2);
  EXPECT_EQ(u.used_bytes, 2 * kBytesPerBlock);
}

TEST_P(CacheOffloadConformance, SavingAKeyAgainReplacesIt) {
  const auto p = open();
  if (!p) GTEST_SKIP() << skip_;
  pool_.fill(0, 1);
  pool_.fill(1, 2);
  save(*p, 42, 0);
  save(*p, 42, 1);
  EXPECT_EQ(usage(*p).num_entries, 1);
  load(*p, 42, 3);
  EXPECT_EQ(pool_.blocks[3], pool_.pattern(2));
}

TEST_P(CacheOffloadConformance, FullTierEvictsLeastRecentlyUsed) {
  const auto p = open("{\"capacity\": " + std::to_string(3 * kBytesPerBlock) + "}");
  if (!p) GTEST_SKIP() << skip_;
  for (int32_t b = 0; b < kNumBlocks; ++b) pool_.fill(b, b + 1);
  save(*p, 1, 0);
  save(*p, 2, 1);
  save(*p, 3, 2);
  load(*p, 1, 5);  // 1 is now the most recent: 2 is the oldest
  save(*p, 4, 3);
  EXPECT_TRUE(contains(*p, 1));
  EXPECT_FALSE(contains(*p, 2));
  EXPECT_TRUE(contains(*p, 3));
  EXPECT_TRUE(contains(*p, 4));
  EXPECT_EQ(usage(*p).num_entries, 3);
  EXPECT_EQ(usage(*p).used_bytes, 3 * kBytesPerBlock);
  save(*p, 3, 2);  // saving again is a use too: 1 is now the oldest
  save(*p, 5, 4);
  EXPECT_FALSE(contains(*p, 1));
  EXPECT_TRUE(contains(*p, 3));
  EXPECT_TRUE(contains(*p, 4));
  EXPECT_TRUE(contains(*p, 5));
  // The survivors still hold their own bytes after chunks were reused.
  load(*p, 4, 5);
  EXPECT_EQ(pool_.blocks[5], pool_.pattern(4));
  load(*p, 5, 5);
  EXPECT_EQ(pool_.blocks[5], pool_.pattern(5));
  load(*p, 3, 5);
  EXPECT_EQ(pool_.blocks[5], pool_.pattern(3));
}

TEST_P(CacheOffloadConformance, FailedCopyLeavesNoEntry) {
  const auto p = open();
  if (!p) GTEST_SKIP() << skip_;
  pool_.failing_block = 2;
  std::string message;
  EXPECT_NE(p->try_call(&message, &loom_cache_offload_vtable::save, uint64_t{9}, int32_t{2}), LOOM_OK);
  EXPECT_NE(message.find("block 2 refused"), std::string::npos) << message;
  EXPECT_FALSE(contains(*p, 9));
  EXPECT_EQ(usage(*p).num_entries, 0);
  pool_.fill(1, 3);
  save(*p, 9, 1);
  EXPECT_NE(p->try_call(&message, &loom_cache_offload_vtable::load, uint64_t{9}, int32_t{2}), LOOM_OK);
  EXPECT_NE(message.find("block 2 refused"), std::string::npos) << message;
}

TEST_P(CacheOffloadConformance, BadConfigIsRefusedNamingTheKeys) {
  for (const char* config : {R"({"capacity": "lots", "colour": "blue"})", R"({"capacity": -5, "colour": 1})",
                             R"({"capacity": 10, "colour": 1})"}) {  // 10 bytes: not even one block
    try {
      const auto p = open(config);
      if (!p && !skip_.empty()) GTEST_SKIP() << skip_;
      ADD_FAILURE() << "config " << config << " was accepted";
    } catch (const Error& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("capacity"), std::string::npos) << m;
      EXPECT_NE(m.find("colour"), std::string::npos) << "every problem at once: " << m;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllCacheOffloadPlugins, CacheOffloadConformance,
                         ::testing::ValuesIn(conformance::plugin_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace loom
