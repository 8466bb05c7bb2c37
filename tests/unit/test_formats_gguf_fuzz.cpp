// Robustness of the GGUF reader: truncations and bit flips of a small valid file must either
// open or throw loom::Error, never crash, hang or allocate without bound. Runs in seconds; the
// same inputs through the mmap path for a sample, so both entry points are covered.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <random>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom {
namespace {

// Opens the bytes; returns true when they parsed. Any exception other than loom::Error fails.
bool try_open(const std::vector<uint8_t>& bytes) {
  try {
    const GgufFile f = GgufFile::from_bytes(bytes, "fuzz.gguf");
    // Touch everything a consumer would: every tensor's last byte is inside the buffer.
    for (const auto& t : f.tensors()) {
      const auto* p = static_cast<const uint8_t*>(t.data);
      volatile uint8_t last = p[t.nbytes - 1];
      (void)last;
    }
    return true;
  } catch (const Error&) {
    return false;
  }
}

bool try_open_file(const std::vector<uint8_t>& bytes, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
  try {
    GgufFile::open(path);
    return true;
  } catch (const Error&) {
    return false;
  }
}

TEST(GgufFuzz, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> good = make_tiny_gguf().to_bytes();
  ASSERT_TRUE(try_open(good));
  const std::string path = ::testing::TempDir() + "loom_gguf_fuzz_" + std::to_string(::getpid());
  // The file ends with the last tensor's padding; cutting only padding leaves a valid file.
  const GgufFile parsed = GgufFile::from_bytes(good, "good");
  const GgufTensorInfo& last = parsed.tensors().back();
  const size_t data_end = good.size() - (32 - last.nbytes % 32) % 32;
  int opened = 0;
  for (size_t k = 0; k < good.size(); ++k) {
    const std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(k));
    EXPECT_EQ(try_open(cut), k >= data_end) << "truncated at " << k;
    if (k % 37 == 1 && k < data_end) opened += try_open_file(cut, path);
  }
  EXPECT_EQ(opened, 0);
  std::remove(path.c_str());
}

TEST(GgufFuzz, RandomBitFlipsFailCleanly) {
  const std::vector<uint8_t> good = make_tiny_gguf().to_bytes();
  std::mt19937_64 rng(20240601);
  std::uniform_int_distribution<size_t> pos(0, good.size() - 1);
  std::uniform_int_distribution<int> bit(0, 7), nflips(1, 4);
  int opened = 0, failed = 0;
  for (int i = 0; i < 4000; ++i) {
    std::vector<uint8_t> b = good;
    for (int j = nflips(rng); j > 0; --j) b[pos(rng)] ^= static_cast<uint8_t>(1u << bit(rng));
    (try_open(b) ? opened : failed) += 1;
  }
  // Flips in tensor data or string contents still parse; flips in lengths/types do not.
  EXPECT_GT(opened, 0);
  EXPECT_GT(failed, 0);
}

TEST(GgufFuzz, HeaderFieldsSetToExtremes) {
  // Every 8-byte window (counts, lengths, types and offsets included) set to values that
  // commonly break parsers.
  const std::vector<uint8_t> good = make_tiny_gguf().to_bytes();
  const uint64_t extremes[] = {0, 1, 0x7fffffffffffffffull, 0x8000000000000000ull, ~uint64_t{0},
                               0xffffffffull, 0x100000000ull, good.size(), good.size() - 1};
  for (size_t at = 0; at + 8 <= good.size(); ++at) {
    for (uint64_t v : extremes) {
      std::vector<uint8_t> b = good;
      std::memcpy(b.data() + at, &v, 8);
      try_open(b);
    }
  }
}

}  // namespace
}  // namespace loom
