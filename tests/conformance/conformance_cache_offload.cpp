// Cache-offload conformance: every cache_offload plugin against a fake pool of a few blocks,
// through the same copy ops the engine hands it. A tier must give back exactly the bytes it was
// given, answer NOT_FOUND for what it does not hold, account its use, replace an entry saved
// again under the same key, evict least recently used first when `capacity` is full (a load is
// a use), leave no entry behind a failed copy, and refuse a bad config naming the key. A tier's
// footprint per entry is at least the block's bytes (a disk file adds its header), so capacities
// here are counted in entries of that footprint. The disk tier's own promises (restart, corrupt
// and foreign files, atomic writes) are in conformance_cache_offload_disk.cpp.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstring>
#include <filesystem>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/common/thread_pool.hpp"
#include "loom/cache_offload.h"
#include "loom/sdk_core.hpp"
#include "tests/conformance/conformance_support.hpp"
#include "tests/conformance/offload_fake_pool.hpp"

namespace loom {
namespace {

using offload_test::FakePool;
using offload_test::kBytesPerBlock;
using offload_test::kNumBlocks;

class CacheOffloadConformance : public ::testing::TestWithParam<std::string> {
 protected:
  void TearDown() override {
    std::error_code ec;
    if (!dir_.empty()) std::filesystem::remove_all(dir_, ec);
  }
  // Creates the plugin over pool_ (nullptr + skip when it cannot run here). A plugin that needs
  // a place of its own (the disk tier's `dir`) gets a fresh directory.
  std::unique_ptr<LoadedPlugin> open(const std::string& config = "{}") {
    const loom_cache_offload_create_args a = offload_test::create_args(pool_, "conformance-model");
    std::string text = config;
    if (GetParam() == "disk") {
      if (dir_.empty()) {
        dir_ = std::filesystem::temp_directory_path() /
               ("loom-conf-offload-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) + "-" +
                ::testing::UnitTest::GetInstance()->current_test_info()->name());
        std::filesystem::remove_all(dir_);
      }
      auto json = nlohmann::json::parse(config);
      json["dir"] = dir_.string();
      text = json.dump();
    }
    return conformance::create_or_skip(host_, LOOM_KIND_CACHE_OFFLOAD, GetParam(), &a, &skip_, text);
  }
  // Bytes one entry takes against the capacity (>= kBytesPerBlock), measured on a throwaway tier.
  int64_t footprint() {
    const auto p = open();
    pool_.fill(0, 1);
    save(*p, 1, 0);
    const int64_t bytes = usage(*p).used_bytes;
    p->call("drop", &loom_cache_offload_vtable::drop, uint64_t{1});
    return bytes;
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
  std::filesystem::path dir_;  // the disk tier's directory, removed after the test
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
  const int64_t per_entry = u.used_bytes / 3;
  EXPECT_EQ(u.used_bytes, 3 * per_entry);
  EXPECT_GE(per_entry, kBytesPerBlock);
  p->call("drop", &loom_cache_offload_vtable::drop, uint64_t{2});
  u = usage(*p);
  EXPECT_EQ(u.num_entries, 2);
  EXPECT_EQ(u.used_bytes, 2 * per_entry);
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
  if (!open()) GTEST_SKIP() << skip_;
  const int64_t per_entry = footprint();
  const auto p = open("{\"capacity\": " + std::to_string(3 * per_entry) + "}");
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
  EXPECT_EQ(usage(*p).used_bytes, 3 * per_entry);
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
