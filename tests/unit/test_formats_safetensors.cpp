// The safetensors reader: a hand-built file and sharded checkpoint open with the right views,
// and every truncation, random bit flip, missing shard and inconsistent header is a
// loom::Error naming the problem, never a crash.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/safetensors_file.hpp"

namespace loom {
namespace {

// header JSON + data bytes -> a safetensors file's bytes.
std::vector<uint8_t> make_file(const std::string& header, const std::vector<uint8_t>& data) {
  // Sized once and filled with memcpy: growing the vector by insert() trips a GCC 12 -O3
  // -Warray-bounds false positive.
  std::vector<uint8_t> out(8 + header.size() + data.size());
  const uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) out[static_cast<size_t>(i)] = static_cast<uint8_t>(n >> (8 * i));
  if (!header.empty()) std::memcpy(out.data() + 8, header.data(), header.size());
  if (!data.empty()) std::memcpy(out.data() + 8 + header.size(), data.data(), data.size());
  return out;
}

// a: F32 [2, 3] = 0..5, b: BF16 [2] = {1.0, -2.0}, c: U8 [3].
std::vector<uint8_t> tiny() {
  std::vector<uint8_t> data(24 + 4 + 3);
  for (int i = 0; i < 6; ++i) {
    const float f = static_cast<float>(i);
    std::memcpy(&data[static_cast<size_t>(i) * 4], &f, 4);
  }
  const uint16_t b[2] = {0x3f80, 0xc000};
  std::memcpy(&data[24], b, 4);
  data[28] = 7, data[29] = 8, data[30] = 9;
  return make_file(R"({"__metadata__":{"format":"pt"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                   R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},"c":{"dtype":"U8","shape":[3],"data_offsets":[28,31]}})",
                   data);
}

std::string error_of(const std::vector<uint8_t>& bytes) {
  try {
    SafetensorsFile::from_bytes(bytes, "t.safetensors");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(Safetensors, ReadsTensorsAndDtypes) {
  const SafetensorsFile f = SafetensorsFile::from_bytes(tiny(), "t.safetensors");
  ASSERT_EQ(f.tensors().size(), 3u);
  const SafetensorsTensor* a = f.find("a");
  ASSERT_NE(a, nullptr);
  EXPECT_EQ(a->dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(a->shape, (std::vector<int64_t>{2, 3}));
  // The header's length puts the data at any byte offset, so the values are read with memcpy
  // (a float load from a misaligned address is undefined behaviour; UBSan reports it).
  float a5 = 0;
  std::memcpy(&a5, static_cast<const uint8_t*>(a->data) + 5 * sizeof(float), sizeof a5);
  EXPECT_EQ(a5, 5.0f);
  EXPECT_EQ(f.find("b")->dtype, LOOM_DTYPE_BF16);
  uint16_t b1 = 0;
  std::memcpy(&b1, static_cast<const uint8_t*>(f.find("b")->data) + sizeof b1, sizeof b1);
  EXPECT_EQ(b1, 0xc000);
  EXPECT_EQ(f.find("c")->dtype, LOOM_DTYPE_U8);
  EXPECT_EQ(f.find("missing"), nullptr);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  EXPECT_EQ(safetensors_dtype("F16"), LOOM_DTYPE_F16);
  EXPECT_EQ(safetensors_dtype("I8"), LOOM_DTYPE_I8);
  EXPECT_EQ(safetensors_dtype("F8_E4M3"), LOOM_DTYPE_FP8_E4M3);
  EXPECT_EQ(safetensors_dtype("BOOL"), LOOM_DTYPE_INVALID);
}

TEST(Safetensors, InconsistentHeadersAreNamed) {
  const std::vector<uint8_t> d(8);
  EXPECT_NE(error_of(make_file(R"({"x":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", d)).find("needs 12"),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"x":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", d)).find("past the end"),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"x":{"dtype":"Q9","shape":[1],"data_offsets":[0,1]}})", d)).find("unknown dtype \"Q9\""),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"x":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", d)).find("non-negative"),
            std::string::npos);
  EXPECT_NE(error_of(make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", d)).find("before begin"),
            std::string::npos);
  EXPECT_NE(error_of(make_file("[1,2]", d)).find("JSON object"), std::string::npos);
  EXPECT_NE(error_of(make_file("{", d)).find("not valid JSON"), std::string::npos);
}

TEST(Safetensors, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> good = tiny();
  for (size_t k = 0; k < good.size(); ++k) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(k));
    EXPECT_FALSE(error_of(cut).empty()) << "truncated at " << k;
  }
  EXPECT_TRUE(error_of(good).empty());
}

TEST(Safetensors, RandomBitFlipsFailCleanly) {
  const std::vector<uint8_t> good = tiny();
  std::mt19937_64 rng(20240602);
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7), nflips(1, 4);
  int opened = 0, failed = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<uint8_t> b = good;
    for (int j = nflips(rng); j > 0; --j) b[pos(rng)] ^= static_cast<uint8_t>(1u << bit(rng));
    try {
      const SafetensorsFile f = SafetensorsFile::from_bytes(b, "fuzz");
      for (const auto& t : f.tensors()) {
        if (t.nbytes == 0) continue;
        volatile uint8_t last = static_cast<const uint8_t*>(t.data)[t.nbytes - 1];
        (void)last;
      }
      ++opened;
    } catch (const Error&) {
      ++failed;
    }
  }
  EXPECT_GT(opened, 0);  // flips in data or in names still parse
  EXPECT_GT(failed, 0);
}

class SafetensorsDir : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "loom_st_" + std::to_string(::getpid());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  void write(const std::string& name, const std::vector<uint8_t>& bytes) {
    std::ofstream(dir_ + "/" + name, std::ios::binary).write(reinterpret_cast<const char*>(bytes.data()),
                                                             static_cast<std::streamsize>(bytes.size()));
  }
  void write_text(const std::string& name, const std::string& text) { std::ofstream(dir_ + "/" + name) << text; }
  std::string dir_;
};

TEST_F(SafetensorsDir, ShardedCheckpointResolvesEveryName) {
  const std::vector<uint8_t> d(4);
  write("s1.safetensors", make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d));
  write("s2.safetensors", make_file(R"({"y":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", d));
  write_text("model.safetensors.index.json", R"({"metadata":{},"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
  const SafetensorsCheckpoint c = SafetensorsCheckpoint::open_dir(dir_);
  EXPECT_EQ(c.num_shards(), 2u);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_EQ(c.find("y")->dtype, LOOM_DTYPE_F16);
  EXPECT_NE(c.find("y")->file.find("s2.safetensors"), std::string::npos);
}

TEST_F(SafetensorsDir, MissingShardAndMissingTensorAreNamed) {
  const std::vector<uint8_t> d(4);
  write("s1.safetensors", make_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", d));
  write_text("model.safetensors.index.json", R"({"weight_map":{"x":"s1.safetensors","y":"s2.safetensors"}})");
  try {
    SafetensorsCheckpoint::open_dir(dir_);
    FAIL() << "opened with a missing shard";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("shard s2.safetensors (holding y) is missing"), std::string::npos) << e.what();
  }
  write_text("model.safetensors.index.json", R"({"weight_map":{"x":"s1.safetensors","z":"s1.safetensors"}})");
  try {
    SafetensorsCheckpoint::open_dir(dir_);
    FAIL() << "opened with a tensor missing from its shard";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tensor z named by the index is not in this shard"), std::string::npos) << e.what();
  }
}

TEST_F(SafetensorsDir, SingleFileAndEmptyDirectory) {
  EXPECT_THROW(SafetensorsCheckpoint::open_dir(dir_), Error);
  write("model.safetensors", tiny());
  const SafetensorsCheckpoint c = SafetensorsCheckpoint::open_dir(dir_);
  EXPECT_EQ(c.num_shards(), 1u);
  EXPECT_NE(c.find("a"), nullptr);
}

}  // namespace
}  // namespace loom
