// A GGUF file opened read-only with mmap: metadata (every value type) and tensor views that
// point straight into the mapping. Every offset and size is checked against the file before it
// is used, so a truncated or corrupt file is a loom::Error naming what is wrong, never a crash.
// Format: https://github.com/ggml-org/ggml/blob/master/docs/gguf.md (v2 and v3 read).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "loom/types.h"

namespace loom {

enum class GgufValueType : uint32_t {
  kUint8 = 0, kInt8 = 1, kUint16 = 2, kInt16 = 3, kUint32 = 4, kInt32 = 5, kFloat32 = 6,
  kBool = 7, kString = 8, kArray = 9, kUint64 = 10, kInt64 = 11, kFloat64 = 12,
};

struct GgufValue;
// Arrays keep their element type so a writer can round-trip them exactly.
struct GgufArray {
  GgufValueType type = GgufValueType::kUint8;
  std::vector<GgufValue> items;
};

struct GgufValue {
  GgufValueType type = GgufValueType::kUint8;
  std::variant<uint64_t, int64_t, double, bool, std::string, GgufArray> value;

  // Typed accessors; each throws loom::Error naming the expected and actual types.
  int64_t as_int() const;        // any integer type (uint64 above INT64_MAX throws)
  double as_float() const;       // float32/float64, and integers
  bool as_bool() const;
  const std::string& as_string() const;
  const GgufArray& as_array() const;

  // Builders that keep type and stored alternative consistent (what GgufWriter expects).
  static GgufValue of_uint(GgufValueType type, uint64_t v);  // kUint8/16/32/64; range-checked
  static GgufValue of_int(GgufValueType type, int64_t v);    // kInt8/16/32/64; range-checked
  static GgufValue of_u32(uint32_t v) { return of_uint(GgufValueType::kUint32, v); }
  static GgufValue of_i32(int32_t v) { return of_int(GgufValueType::kInt32, v); }
  static GgufValue of_u64(uint64_t v) { return of_uint(GgufValueType::kUint64, v); }
  static GgufValue of_i64(int64_t v) { return of_int(GgufValueType::kInt64, v); }
  static GgufValue of_f32(float v);
  static GgufValue of_f64(double v);
  static GgufValue of_bool(bool v);
  static GgufValue of_string(std::string v);
  // Every item must have type elem_type (checked).
  static GgufValue of_array(GgufValueType elem_type, std::vector<GgufValue> items);
  static GgufValue of_strings(const std::vector<std::string>& items);
  static GgufValue of_f32s(const std::vector<float>& items);
  static GgufValue of_i32s(const std::vector<int32_t>& items);

  bool operator==(const GgufValue& other) const;
};

// "uint32", "string", "array", ... ("unknown" for a number outside the enum).
const char* gguf_type_name(GgufValueType t);

struct GgufTensorInfo {
  std::string name;
  loom_dtype dtype = LOOM_DTYPE_INVALID;  // ggml type number, see loom_dtype
  std::vector<int64_t> dims;              // GGUF order: dims[0] is the innermost (contiguous)
  uint64_t offset = 0;                    // from the start of the data section
  uint64_t nbytes = 0;
  const void* data = nullptr;             // into the mapping
};

class GgufFile {
 public:
  // Opens and validates the whole file (header, metadata, tensor table, every tensor's extent).
  // Throws loom::Error("<path>: <what is wrong>") on any problem.
  static GgufFile open(const std::string& path);
  // Same validation over an in-memory copy of a file's bytes (tests, fuzzing); `name` stands
  // in for the path in error messages.
  static GgufFile from_bytes(std::vector<uint8_t> bytes, const std::string& name);
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
  GgufFile(const GgufFile&) = delete;
  GgufFile& operator=(const GgufFile&) = delete;
  ~GgufFile();

  const std::string& path() const { return path_; }
  uint32_t version() const { return version_; }
  uint64_t alignment() const { return alignment_; }

  const std::map<std::string, GgufValue>& metadata() const { return metadata_; }
  const GgufValue* find(const std::string& key) const;     // nullptr when absent
  const GgufValue& get(const std::string& key) const;      // throws naming the missing key
  // Convenience: value of an optional key or a default.
  int64_t get_int(const std::string& key, int64_t fallback) const;
  double get_float(const std::string& key, double fallback) const;
  bool get_bool(const std::string& key, bool fallback) const;
  std::string get_string(const std::string& key, const std::string& fallback) const;

  const std::vector<GgufTensorInfo>& tensors() const { return tensors_; }
  const GgufTensorInfo* find_tensor(const std::string& name) const;  // nullptr when absent
  const GgufTensorInfo& tensor(const std::string& name) const;       // throws naming it

 private:
  GgufFile() = default;
  std::string path_;
  uint32_t version_ = 0;
  uint64_t alignment_ = 32;
  std::map<std::string, GgufValue> metadata_;
  std::vector<GgufTensorInfo> tensors_;
  std::map<std::string, size_t> tensor_index_;
  void* map_ = nullptr;
  size_t map_size_ = 0;
  std::vector<uint8_t> owned_;  // from_bytes() storage; tensor views point into it
  void parse(const uint8_t* base, size_t size);
};

// Name of a ggml/loom dtype ("f32", "q4_K", ...) and its block geometry.
const char* dtype_name(loom_dtype t);
int64_t dtype_block_size(loom_dtype t);   // elements per block (1 for plain types); 0 if unknown
int64_t dtype_block_bytes(loom_dtype t);  // bytes per block; 0 if unknown
// Bytes of n_elements elements of t; throws loom::Error when t is unknown or n_elements is not a
// whole number of blocks.
uint64_t dtype_nbytes(loom_dtype t, int64_t n_elements);

}  // namespace loom
