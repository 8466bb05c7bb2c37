// cache_offload/disk beyond the shared conformance suite: what it promises because its blocks
// outlive the process. Blocks survive a restart; a file flipped, truncated, left half-written or
// written for another model is detected, logged, removed and never loaded (the load is a miss);
// the files never take more than `capacity`; each header records the block's provenance.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/cache_offload.h"
#include "tests/conformance/offload_fake_pool.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;
using offload_test::FakePool;
using offload_test::kBytesPerBlock;

constexpr int64_t kFileBytes = 136 + kBytesPerBlock;  // header + payload (block_file.hpp)

class DiskTier : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-disk-tier-" + std::string(::testing::UnitTest::GetInstance()
                                                                             ->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::unique_ptr<LoadedPlugin> open(const char* fingerprint = "model-a", int64_t capacity = 1 << 20) {
    args_ = offload_test::create_args(pool_, fingerprint);
    const std::string config = "{\"dir\": \"" + dir_.string() + "\", \"capacity\": " + std::to_string(capacity) + "}";
    return host_.create(PluginSpec{LOOM_KIND_CACHE_OFFLOAD, "disk", "", config}, &args_);
  }
  static void save(const LoadedPlugin& p, uint64_t key, int32_t block) {
    p.call("save", &loom_cache_offload_vtable::save, key, block);
  }
  static loom_status load(const LoadedPlugin& p, uint64_t key, int32_t block) {
    return p.try_call(nullptr, &loom_cache_offload_vtable::load, key, block);
  }
  static bool contains(const LoadedPlugin& p, uint64_t key) {
    int32_t present = 0;
    p.call("contains", &loom_cache_offload_vtable::contains, key, &present);
    return present == 1;
  }
  // The block files of a tier directory (every fingerprint's subdirectory), by name.
  std::vector<fs::path> files() const {
    std::vector<fs::path> out;
    for (const auto& e : fs::recursive_directory_iterator(dir_))
      if (e.is_regular_file()) out.push_back(e.path());
    std::sort(out.begin(), out.end());
    return out;
  }
  int64_t bytes_on_disk() const {
    int64_t n = 0;
    for (const fs::path& f : files()) n += static_cast<int64_t>(fs::file_size(f));
    return n;
  }
  fs::path file_of(uint64_t key) const {
    char name[32];
    std::snprintf(name, sizeof(name), "%016llx.kvb", static_cast<unsigned long long>(key));
    for (const fs::path& f : files())
      if (f.filename() == name) return f;
    return {};
  }
  static void flip(const fs::path& f, int64_t offset) {
    std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
    io.seekg(offset);
    char c = 0;
    io.get(c);
    io.seekp(offset);
    io.put(static_cast<char>(c ^ 0x10));
  }

  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  FakePool pool_;
  loom_cache_offload_create_args args_{};
  fs::path dir_;
};

TEST_F(DiskTier, BlocksSurviveARestartByteExact) {
  {
    const auto p = open();
    for (int32_t b = 0; b < 3; ++b) {
      pool_.fill(b, 40 + b);
      save(*p, 100 + static_cast<uint64_t>(b), b);
    }
  }
  pool_.fill(0, 0);
  const auto p = open();
  loom_cache_offload_usage u{};
  u.struct_size = sizeof(u);
  p->call("usage", &loom_cache_offload_vtable::usage, &u);
  EXPECT_EQ(u.num_entries, 3);
  EXPECT_EQ(u.used_bytes, 3 * kFileBytes);
  for (int32_t b = 0; b < 3; ++b) {
    ASSERT_EQ(load(*p, 100 + static_cast<uint64_t>(b), 5), LOOM_OK);
    EXPECT_EQ(pool_.blocks[5], pool_.pattern(40 + b)) << "block " << b;
  }
}

TEST_F(DiskTier, HeaderRecordsFingerprintKeyHashSaltAndTokens) {
  const auto p = open();
  pool_.fill(1, 7);
  loom_offload_entry e{};
  e.struct_size = sizeof(e);
  e.key = 0x1234;
  e.prefix_hash = 0xfedcba9876543210ull;
  e.salt = 99;
  e.num_tokens = 16;
  p->call("save_entry", &loom_cache_offload_vtable::save_entry, &e, int32_t{1});
  std::ifstream in(file_of(0x1234), std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(static_cast<int64_t>(bytes.size()), kFileBytes);
  EXPECT_EQ(std::string(bytes.data(), 8), "LOOMKVB1");
  EXPECT_EQ(std::string(bytes.data() + 16), "model-a");
  auto u64 = [&](size_t at) {
    uint64_t v;
    std::memcpy(&v, bytes.data() + at, 8);
    return v;
  };
  EXPECT_EQ(u64(80), 0x1234u);
  EXPECT_EQ(u64(88), 0xfedcba9876543210ull);
  EXPECT_EQ(u64(96), 99u);
  int32_t tokens = 0;
  std::memcpy(&tokens, bytes.data() + 104, 4);
  EXPECT_EQ(tokens, 16);
  EXPECT_EQ(u64(112), static_cast<uint64_t>(kBytesPerBlock));
  EXPECT_EQ(std::memcmp(bytes.data() + 136, pool_.pattern(7).data(), kBytesPerBlock), 0);
}

TEST_F(DiskTier, CorruptAndTruncatedFilesAreRemovedNeverLoaded) {
  {
    const auto p = open();
    for (int32_t b = 0; b < 5; ++b) {
      pool_.fill(b, 60 + b);
      save(*p, static_cast<uint64_t>(b + 1), b);
    }
  }
  flip(file_of(1), 136 + 3);  // payload byte: found only when loaded
  flip(file_of(2), 90);       // header byte: found at start-up
  fs::resize_file(file_of(3), kFileBytes - 1);  // truncated
  fs::resize_file(file_of(4), 20);              // truncated inside the header
  const fs::path one = file_of(1);
  const auto p = open();
  EXPECT_TRUE(file_of(2).empty()) << "a file with a bad header must be removed at start-up";
  EXPECT_TRUE(file_of(3).empty());
  EXPECT_TRUE(file_of(4).empty());
  EXPECT_FALSE(contains(*p, 2));
  EXPECT_FALSE(contains(*p, 3));
  EXPECT_FALSE(contains(*p, 4));
  pool_.fill(5, 0);
  const std::vector<std::byte> before = pool_.blocks[5];
  EXPECT_EQ(load(*p, 1, 5), LOOM_ERR_NOT_FOUND) << "a flipped payload byte must never be loaded";
  EXPECT_EQ(pool_.blocks[5], before) << "nothing of the corrupt block reached the pool";
  EXPECT_FALSE(fs::exists(one));
  EXPECT_FALSE(contains(*p, 1));
  ASSERT_EQ(load(*p, 5, 5), LOOM_OK);
  EXPECT_EQ(pool_.blocks[5], pool_.pattern(64));
  // Corruption while running is caught the same way.
  flip(file_of(5), kFileBytes - 1);
  EXPECT_EQ(load(*p, 5, 4), LOOM_ERR_NOT_FOUND);
  EXPECT_TRUE(file_of(5).empty());
}

TEST_F(DiskTier, FilesOfAnotherModelAreRefused) {
  {
    const auto a = open("model-a");
    pool_.fill(0, 1);
    save(*a, 42, 0);
  }
  fs::path a_file = file_of(42);
  {
    const auto b = open("model-b");
    EXPECT_FALSE(contains(*b, 42)) << "another fingerprint's directory is not this model's";
    pool_.fill(0, 2);
    save(*b, 43, 0);
  }
  // Swap: model a's file put into model b's directory under a name b will look up.
  const fs::path b_dir = file_of(43).parent_path();
  ASSERT_NE(b_dir, a_file.parent_path());
  fs::copy_file(a_file, b_dir / a_file.filename());
  fs::copy_file(file_of(43), a_file.parent_path() / "000000000000002b.kvb");
  const auto b = open("model-b");
  EXPECT_FALSE(contains(*b, 42)) << "a file written for model a must never be loaded for model b";
  EXPECT_FALSE(fs::exists(b_dir / a_file.filename()));
  EXPECT_TRUE(contains(*b, 43));
  const auto a = open("model-a");
  EXPECT_FALSE(contains(*a, 43));
  EXPECT_TRUE(contains(*a, 42));
}

TEST_F(DiskTier, InterruptedWritesAndStrangersAreRemovedAtStartUp) {
  {
    const auto p = open();
    pool_.fill(0, 3);
    save(*p, 7, 0);
  }
  const fs::path sub = file_of(7).parent_path();
  std::ofstream(sub / "0000000000000008.kvb.123.0.tmp") << "half a block";  // a kill -9 mid-write
  std::ofstream(sub / "notes.txt") << "not a block";
  fs::copy_file(file_of(7), sub / "0000000000000009.kvb");  // the name says 9, the header 7
  const auto p = open();
  EXPECT_EQ(files().size(), 1u) << "only the sound block is left";
  EXPECT_TRUE(contains(*p, 7));
  EXPECT_FALSE(contains(*p, 8));
  EXPECT_FALSE(contains(*p, 9));
}

TEST_F(DiskTier, NeverTakesMoreThanItsCapacity) {
  const int64_t capacity = 3 * kFileBytes + kFileBytes / 2;
  {
    const auto p = open("model-a", capacity);
    for (uint64_t key = 1; key <= 12; ++key) {
      pool_.fill(0, static_cast<int>(key));
      save(*p, key, 0);
      EXPECT_LE(bytes_on_disk(), capacity) << "after saving key " << key;
    }
    EXPECT_EQ(files().size(), 3u);
    EXPECT_TRUE(contains(*p, 12));
    EXPECT_FALSE(contains(*p, 9));
  }
  // A restart with a smaller capacity trims the oldest files first.
  const auto p = open("model-a", 2 * kFileBytes);
  EXPECT_LE(bytes_on_disk(), 2 * kFileBytes);
  EXPECT_TRUE(contains(*p, 12));
  EXPECT_FALSE(contains(*p, 10));
}

// Without a fingerprint its files could not be told from another model's: a 1.0 host's shorter
// create args, or a NULL fingerprint, are refused at create.
TEST_F(DiskTier, NeedsTheFingerprintOfInterface1_1) {
  const std::string config = "{\"dir\": \"" + dir_.string() + "\"}";
  auto refusal = [&](const loom_cache_offload_create_args& args) -> std::string {
    try {
      host_.create(PluginSpec{LOOM_KIND_CACHE_OFFLOAD, "disk", "", config}, &args);
    } catch (const Error& e) {
      return e.what();
    }
    return "created";
  };
  args_ = offload_test::create_args(pool_, "x");
  args_.struct_size = offsetof(loom_cache_offload_create_args, model_fingerprint);  // a 1.0 host
  EXPECT_NE(refusal(args_).find("struct_size"), std::string::npos) << refusal(args_);
  args_ = offload_test::create_args(pool_, nullptr);
  EXPECT_NE(refusal(args_).find("fingerprint"), std::string::npos) << refusal(args_);
}

}  // namespace
}  // namespace loom
