// GGUF reader and writer: round trip of every value type, tensor views, alignment, dtype table,
// and precise errors for corrupt files.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"

namespace loom {
namespace {

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "loom_gguf_" + std::to_string(::getpid()) + "_" + name;
}

// Expects GgufFile::from_bytes to throw a loom::Error whose message contains `needle`.
void expect_error(std::vector<uint8_t> bytes, const std::string& needle) {
  try {
    GgufFile::from_bytes(std::move(bytes), "mem.gguf");
    FAIL() << "no error; expected one containing '" << needle << "'";
  } catch (const Error& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("mem.gguf: ", 0), 0u) << msg;
    EXPECT_NE(msg.find(needle), std::string::npos) << msg;
  }
}

template <typename T>
void put(std::vector<uint8_t>& b, size_t at, T v) {
  std::memcpy(b.data() + at, &v, sizeof(T));
}

// Byte offset of the first occurrence of `s` in b.
size_t find_bytes(const std::vector<uint8_t>& b, const std::string& s) {
  for (size_t i = 0; i + s.size() <= b.size(); ++i) {
    if (std::memcmp(b.data() + i, s.data(), s.size()) == 0) return i;
  }
  ADD_FAILURE() << "'" << s << "' not found";
  return 0;
}

TEST(GgufFile, ReadsEveryValueType) {
  const GgufFile f = GgufFile::from_bytes(make_tiny_gguf().to_bytes(), "tiny");
  EXPECT_EQ(f.version(), 3u);
  EXPECT_EQ(f.alignment(), 32u);
  EXPECT_EQ(f.get_string("general.architecture", ""), "tiny");
  EXPECT_EQ(f.get("test.u8").type, GgufValueType::kUint8);
  EXPECT_EQ(f.get("test.u8").as_int(), 200);
  EXPECT_EQ(f.get("test.i8").as_int(), -100);
  EXPECT_EQ(f.get("test.u16").as_int(), 60000);
  EXPECT_EQ(f.get("test.i16").as_int(), -30000);
  EXPECT_EQ(f.get("test.u32").as_int(), 4000000000LL);
  EXPECT_EQ(f.get("test.i32").as_int(), -2000000000);
  EXPECT_EQ(f.get("test.f32").as_float(), static_cast<double>(0.1f));
  EXPECT_TRUE(f.get("test.bool").as_bool());
  EXPECT_EQ(f.get("test.string").as_string(), "h\xC3\xA9llo \xE2\x96\x81world");
  EXPECT_EQ(std::get<uint64_t>(f.get("test.u64").value), 18000000000000000000ull);
  EXPECT_THROW(f.get("test.u64").as_int(), Error);  // above INT64_MAX
  EXPECT_EQ(f.get("test.i64").as_int(), -9000000000000000000LL);
  EXPECT_EQ(f.get("test.f64").as_float(), -2.5e300);
  const GgufArray& strs = f.get("test.strings").as_array();
  ASSERT_EQ(strs.type, GgufValueType::kString);
  ASSERT_EQ(strs.items.size(), 3u);
  EXPECT_EQ(strs.items[2].as_string(), std::string("a\0b", 3));
  const GgufArray& nested = f.get("test.nested").as_array();
  ASSERT_EQ(nested.type, GgufValueType::kArray);
  ASSERT_EQ(nested.items.size(), 3u);
  EXPECT_EQ(nested.items[0].as_array().items[1].as_int(), 8);
  EXPECT_TRUE(nested.items[1].as_array().items.empty());
  EXPECT_FALSE(nested.items[2].as_array().items[0].as_bool());
  // Defaults and typed errors name the key.
  EXPECT_EQ(f.get_int("absent", 7), 7);
  EXPECT_EQ(f.find("absent"), nullptr);
  EXPECT_THROW(f.get("absent"), Error);
  try {
    f.get_int("test.string", 0);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("test.string"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("got string"), std::string::npos);
  }
}

TEST(GgufFile, TensorViewsPointAtTheData) {
  const GgufFile f = GgufFile::from_bytes(make_tiny_gguf().to_bytes(), "tiny");
  ASSERT_EQ(f.tensors().size(), 4u);
  const GgufTensorInfo& a = f.tensor("a.weight");
  EXPECT_EQ(a.dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(a.dims, (std::vector<int64_t>{3, 2}));
  EXPECT_EQ(a.nbytes, 24u);
  const auto* av = static_cast<const float*>(a.data);
  EXPECT_EQ(av[0], 1.0f);
  EXPECT_EQ(av[5], 6.0f);
  const GgufTensorInfo& b = f.tensor("b.f16");
  EXPECT_EQ(b.nbytes, 8u);
  uint16_t h[4];
  std::memcpy(h, b.data, 8);
  EXPECT_EQ(f16_to_f32(h[0]), 0.5f);
  EXPECT_EQ(f16_to_f32(h[2]), 65504.0f);
  const GgufTensorInfo& c = f.tensor("c.bf16");
  std::memcpy(h, c.data, 8);
  EXPECT_EQ(bf16_to_f32(h[1]), -1.0f);
  const GgufTensorInfo& d = f.tensor("d.q8_0");
  EXPECT_EQ(d.dtype, LOOM_DTYPE_Q8_0);
  EXPECT_EQ(d.nbytes, 34u);
  EXPECT_EQ(static_cast<const uint8_t*>(d.data)[33], 0x11);
  for (const auto& t : f.tensors()) EXPECT_EQ(t.offset % 32, 0u) << t.name;
  EXPECT_EQ(f.find_tensor("nope"), nullptr);
  EXPECT_THROW(f.tensor("nope"), Error);
}

TEST(GgufWriter, RoundTripsThroughAFileExactly) {
  const GgufWriter w = make_tiny_gguf();
  const std::string path = temp_path("roundtrip.gguf");
  w.write(path);
  const GgufFile f = GgufFile::open(path);
  ASSERT_EQ(f.metadata().size(), w.metadata().size());
  for (const auto& [key, value] : w.metadata()) {
    ASSERT_NE(f.find(key), nullptr) << key;
    EXPECT_TRUE(*f.find(key) == value) << key;
  }
  // Re-writing what was read gives the same bytes.
  GgufWriter again;
  for (const auto& [key, value] : w.metadata()) again.set(key, *f.find(key));
  for (const auto& t : f.tensors()) {
    const auto* p = static_cast<const uint8_t*>(t.data);
    again.add_tensor(t.name, t.dtype, t.dims, std::vector<uint8_t>(p, p + t.nbytes));
  }
  EXPECT_EQ(again.to_bytes(), w.to_bytes());
  GgufFile moved = GgufFile::open(path);
  GgufFile target = std::move(moved);
  EXPECT_EQ(static_cast<const float*>(target.tensor("a.weight").data)[1], 2.0f);
  std::remove(path.c_str());
}

TEST(GgufWriter, HonoursAlignmentAndStreamsFills) {
  GgufWriter w(64);
  w.add_tensor("x", LOOM_DTYPE_F32, {3}, [](GgufTensorSink& s) {
    const float v[3] = {1, 2, 3};
    s.write(v, 8);
    s.write(v + 2, 4);
  });
  w.add_tensor_f32("y", LOOM_DTYPE_F32, {1}, std::vector<float>{9.0f});
  const GgufFile f = GgufFile::from_bytes(w.to_bytes(), "aligned");
  EXPECT_EQ(f.alignment(), 64u);
  EXPECT_EQ(f.get_int("general.alignment", 0), 64);
  EXPECT_EQ(f.tensor("y").offset, 64u);
  EXPECT_EQ(static_cast<const float*>(f.tensor("x").data)[2], 3.0f);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(f.tensor("y").data) % 64, reinterpret_cast<uintptr_t>(f.tensor("x").data) % 64);

  GgufWriter short_fill;
  short_fill.add_tensor("z", LOOM_DTYPE_F32, {2}, [](GgufTensorSink& s) { s.write("abcd", 4); });
  EXPECT_THROW(short_fill.to_bytes(), Error);
  GgufWriter bad;
  EXPECT_THROW(bad.add_tensor("q", LOOM_DTYPE_Q4_0, {16}, std::vector<uint8_t>(9)), Error);  // 16 % 32
  EXPECT_THROW(bad.add_tensor("f", LOOM_DTYPE_F32, {2}, std::vector<uint8_t>(7)), Error);
  EXPECT_THROW(GgufWriter(48), Error);
  EXPECT_THROW(GgufValue::of_uint(GgufValueType::kUint8, 256), Error);
  EXPECT_THROW(GgufValue::of_array(GgufValueType::kInt32, {GgufValue::of_u32(1)}), Error);
}

TEST(GgufFile, ReadsVersion2) {
  std::vector<uint8_t> b = make_tiny_gguf().to_bytes();
  put<uint32_t>(b, 4, 2);  // v2 and v3 share the little-endian layout
  EXPECT_EQ(GgufFile::from_bytes(b, "v2").version(), 2u);
}

TEST(GgufFile, ReportsCorruptionPrecisely) {
  const std::vector<uint8_t> good = make_tiny_gguf().to_bytes();
  auto with = [&](auto edit) {
    std::vector<uint8_t> b = good;
    edit(b);
    return b;
  };
  expect_error(with([](auto& b) { b[0] = 'X'; }), "bad magic");
  expect_error(with([](auto& b) { put<uint32_t>(b, 4, 1); }), "version 1");
  expect_error(with([](auto& b) { put<uint32_t>(b, 4, 9); }), "unsupported GGUF version 9");
  expect_error(with([](auto& b) { put<uint32_t>(b, 4, 0x03000000u); }), "big-endian");
  expect_error(with([](auto& b) { put<uint64_t>(b, 8, uint64_t{1} << 60); }), "tensor count");
  expect_error(with([](auto& b) { put<uint64_t>(b, 16, uint64_t{1} << 60); }), "metadata count");
  // The first key's string length.
  expect_error(with([](auto& b) { put<uint64_t>(b, 24, 1u << 30); }), "metadata key #0 (length 1073741824)");
  expect_error(std::vector<uint8_t>(good.begin(), good.begin() + 20), "metadata count needs 8 bytes at offset 16");
  // An unknown value type right after the first key ("general.architecture").
  expect_error(with([&](auto& b) { put<uint32_t>(b, 32 + 20, 13); }), "unknown value type 13");
  // Tensor table edits: find "d.q8_0" and patch its n_dims / dim / type / offset.
  const size_t name = find_bytes(good, "d.q8_0");
  const size_t n_dims_at = name + 6, dim_at = n_dims_at + 4, type_at = dim_at + 8, off_at = type_at + 4;
  expect_error(with([&](auto& b) { put<uint32_t>(b, n_dims_at, 5); }), "n_dims 5");
  expect_error(with([&](auto& b) { put<uint64_t>(b, dim_at, 0); }), "not positive");
  expect_error(with([&](auto& b) { put<uint64_t>(b, dim_at, 16); }), "block size 32");
  expect_error(with([&](auto& b) { put<uint32_t>(b, type_at, 4); }), "unknown ggml type 4");
  expect_error(with([&](auto& b) { put<uint64_t>(b, off_at, 8); }), "not a multiple of the alignment");
  expect_error(with([&](auto& b) { put<uint64_t>(b, off_at, 1u << 20); }), "past the end of the data section");
  expect_error(with([&](auto& b) { put<uint64_t>(b, off_at, 0); }), "overlap");
  // Product overflow: a 2-D tensor whose dims multiply past int64.
  const size_t a_name = find_bytes(good, "a.weight");
  expect_error(with([&](auto& b) {
                 put<uint64_t>(b, a_name + 8 + 4, uint64_t{1} << 62);
                 put<uint64_t>(b, a_name + 8 + 12, uint64_t{1} << 62);
               }),
               "overflows");
  // One byte short of the last tensor (34 bytes of q8_0 followed by 30 bytes of padding).
  expect_error(std::vector<uint8_t>(good.begin(), good.end() - 31), "past the end of the data section");
}

TEST(GgufFile, RejectsBadAlignmentAndDuplicates) {
  GgufWriter w;
  w.set_u32("general.alignment", 24);
  expect_error(w.to_bytes(), "general.alignment 24");
  GgufWriter s;
  s.set_string("general.alignment", "32");
  expect_error(s.to_bytes(), "must be an integer");
  // Duplicate key: rename the second key in place to match the first (same length).
  GgufWriter d;
  d.set_u32("k.a", 1);
  d.set_u32("k.b", 2);
  std::vector<uint8_t> b = d.to_bytes();
  b[find_bytes(b, "k.b") + 2] = 'a';
  expect_error(b, "duplicate metadata key 'k.a'");
}

TEST(GgufFile, OpenNamesThePath) {
  try {
    GgufFile::open("/nonexistent/x.gguf");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("/nonexistent/x.gguf: ", 0), 0u) << e.what();
  }
  const std::string path = temp_path("empty.gguf");
  std::fclose(std::fopen(path.c_str(), "wb"));
  EXPECT_THROW(GgufFile::open(path), Error);
  std::remove(path.c_str());
}

TEST(GgufDtype, BlockGeometry) {
  EXPECT_STREQ(dtype_name(LOOM_DTYPE_F32), "f32");
  EXPECT_STREQ(dtype_name(LOOM_DTYPE_BF16), "bf16");
  EXPECT_STREQ(dtype_name(LOOM_DTYPE_Q4_K), "q4_K");
  EXPECT_EQ(dtype_block_size(LOOM_DTYPE_Q4_0), 32);
  EXPECT_EQ(dtype_block_bytes(LOOM_DTYPE_Q4_0), 18);
  EXPECT_EQ(dtype_block_bytes(LOOM_DTYPE_Q8_0), 34);
  EXPECT_EQ(dtype_block_size(LOOM_DTYPE_Q6_K), 256);
  EXPECT_EQ(dtype_block_bytes(LOOM_DTYPE_Q6_K), 210);
  EXPECT_EQ(dtype_block_bytes(LOOM_DTYPE_Q4_K), 144);
  EXPECT_EQ(dtype_block_bytes(LOOM_DTYPE_Q2_K), 84);
  EXPECT_EQ(dtype_block_bytes(static_cast<loom_dtype>(39)), 17);  // mxfp4
  EXPECT_EQ(dtype_block_size(static_cast<loom_dtype>(4)), 0);     // removed q4_2
  EXPECT_STREQ(dtype_name(static_cast<loom_dtype>(4)), "unknown");
  EXPECT_EQ(dtype_nbytes(LOOM_DTYPE_Q4_K, 512), 288u);
  EXPECT_THROW(dtype_nbytes(LOOM_DTYPE_Q4_K, 100), Error);
  // Every type GGUF numbers 0..39 is either known with a consistent geometry or unknown.
  for (int t = 0; t < 40; ++t) {
    const auto d = static_cast<loom_dtype>(t);
    EXPECT_EQ(dtype_block_size(d) == 0, dtype_block_bytes(d) == 0) << t;
  }
}

}  // namespace
}  // namespace loom
