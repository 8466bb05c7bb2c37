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
};

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
  GgufFile(GgufFile&&) noexcept;
  GgufFile& operator=(GgufFile&&) noexcept;
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
};

// Name of a ggml/loom dtype ("f32", "q4_K", ...) and its block geometry.
const char* dtype_name(loom_dtype t);
int64_t dtype_block_size(loom_dtype t);   // elements per block (1 for plain types); 0 if unknown
int64_t dtype_block_bytes(loom_dtype t);  // bytes per block; 0 if unknown

}  // namespace loom
