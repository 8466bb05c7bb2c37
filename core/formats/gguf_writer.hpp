// Writes GGUF v3 files: metadata in insertion order, then the tensor table, then each tensor's
// bytes at an aligned offset. Tensor data can come from memory or from a fill callback that
// streams it, so a 16 GB model is written without holding it in RAM.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/gguf_file.hpp"

namespace loom {

// Where a fill callback writes a tensor's bytes; it must write exactly the tensor's nbytes.
class GgufTensorSink {
 public:
  virtual ~GgufTensorSink() = default;
  virtual void write(const void* data, size_t n) = 0;
};
using GgufTensorFill = std::function<void(GgufTensorSink&)>;

class GgufWriter {
 public:
  explicit GgufWriter(uint64_t alignment = 32);  // power of two; != 32 also writes general.alignment

  // Metadata keeps insertion order; setting a key again replaces its value in place.
  void set(const std::string& key, GgufValue value);
  void set_string(const std::string& key, std::string v) { set(key, GgufValue::of_string(std::move(v))); }
  void set_u32(const std::string& key, uint32_t v) { set(key, GgufValue::of_u32(v)); }
  void set_i32(const std::string& key, int32_t v) { set(key, GgufValue::of_i32(v)); }
  void set_f32(const std::string& key, float v) { set(key, GgufValue::of_f32(v)); }
  void set_bool(const std::string& key, bool v) { set(key, GgufValue::of_bool(v)); }
  const std::vector<std::pair<std::string, GgufValue>>& metadata() const { return metadata_; }

  // Tensors are written in the order added. dims in GGUF order (dims[0] innermost); data is
  // nbytes = dtype_nbytes(dtype, product(dims)) bytes. Throws on a bad shape or duplicate name.
  void add_tensor(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                  std::vector<uint8_t> data);
  void add_tensor(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                  GgufTensorFill fill);
  // f32 values stored as dtype (f32, f16 or bf16; rounded to nearest even).
  void add_tensor_f32(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims,
                      std::span<const float> values);
  size_t tensor_count() const { return tensors_.size(); }

  // Writes the file to `path` via `path.tmp` + rename, so a failed or interrupted write never
  // leaves a truncated model behind. Throws loom::Error naming the path.
  void write(const std::string& path) const;
  std::vector<uint8_t> to_bytes() const;

  class Output;  // byte destination of write()/to_bytes(); defined in the .cpp

 private:
  struct Tensor {
    std::string name;
    loom_dtype dtype;
    std::vector<int64_t> dims;
    uint64_t nbytes;
    std::vector<uint8_t> data;  // when fill is empty
    GgufTensorFill fill;
  };
  void write_to(Output& out) const;
  Tensor& new_tensor(const std::string& name, loom_dtype dtype, std::vector<int64_t> dims);

  uint64_t alignment_;
  std::vector<std::pair<std::string, GgufValue>> metadata_;
  std::vector<Tensor> tensors_;
};

// Converts f32 values to dtype (f32/f16/bf16) and appends the bytes to out.
void encode_f32(std::span<const float> values, loom_dtype dtype, std::vector<uint8_t>& out);

// A tiny valid GGUF for tests and fuzzing: every metadata value type (including nested arrays)
// and a few small f32/f16/bf16 tensors with known contents.
GgufWriter make_tiny_gguf();

}  // namespace loom
