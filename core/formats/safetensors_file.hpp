// Hugging Face safetensors checkpoints, opened read-only with mmap: one file, or the shards named
// by a model.safetensors.index.json. Every header field, offset and size is checked against the
// file before it is used, so a truncated or corrupt file (or a missing shard) is a loom::Error
// naming the file and what is wrong, never a crash.
// Format: 8-byte little-endian header length N, N bytes of JSON
//   {"<name>": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]}, "__metadata__": {..}}
// then the data section; offsets are relative to its start. https://github.com/huggingface/safetensors
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/formats/mapped_file.hpp"
#include "loom/types.h"

namespace loom {

struct SafetensorsTensor {
  std::string name;
  std::string dtype_name;              // as stored: "F32", "BF16", ...
  loom_dtype dtype = LOOM_DTYPE_INVALID;
  std::vector<int64_t> shape;          // outermost first (row-major, like PyTorch)
  uint64_t nbytes = 0;
  const void* data = nullptr;          // into the mapping
  std::string file;                    // the file that holds it (error messages)
};

// The loom dtype of a safetensors dtype string; LOOM_DTYPE_INVALID when Loom has none
// (BOOL, F8_E5M2, ...).
loom_dtype safetensors_dtype(const std::string& name);
// Bytes per element of a safetensors dtype string; 0 when unknown.
int64_t safetensors_dtype_size(const std::string& name);

class SafetensorsFile {
 public:
  // Maps and validates the whole file. Throws loom::Error("<path>: <what is wrong>").
  static SafetensorsFile open(const std::string& path);
  // Same validation over an in-memory copy (tests, fuzzing); `name` stands in for the path.
  static SafetensorsFile from_bytes(std::vector<uint8_t> bytes, const std::string& name);

  const std::string& path() const { return path_; }
  const std::vector<SafetensorsTensor>& tensors() const { return tensors_; }
  const SafetensorsTensor* find(const std::string& name) const;  // nullptr when absent
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  SafetensorsFile() = default;
  void parse(const uint8_t* base, size_t size);
  std::string path_;
  std::shared_ptr<MappedFile> map_;        // shared: the file is movable, its views stay valid
  std::shared_ptr<std::vector<uint8_t>> owned_;
  std::vector<SafetensorsTensor> tensors_;
  std::map<std::string, size_t> index_;
  std::map<std::string, std::string> metadata_;
};

// All the tensors of a checkpoint directory: model.safetensors, or the shards its
// model.safetensors.index.json maps tensor names to. Throws loom::Error naming a missing shard,
// a tensor the index names that its shard lacks, or a name found in two files.
class SafetensorsCheckpoint {
 public:
  static SafetensorsCheckpoint open_dir(const std::string& dir);
  // A single .safetensors file as a one-shard checkpoint.
  static SafetensorsCheckpoint open_file(const std::string& path);

  const SafetensorsTensor* find(const std::string& name) const;
  std::vector<std::string> names() const;  // sorted
  size_t num_shards() const { return shards_.size(); }

 private:
  std::vector<std::unique_ptr<SafetensorsFile>> shards_;
  std::map<std::string, const SafetensorsTensor*> by_name_;
  void add(std::unique_ptr<SafetensorsFile> shard);
};

}  // namespace loom
