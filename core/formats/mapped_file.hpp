// A whole file mapped read-only into memory (mmap). Model files are read through mappings so a
// multi-gigabyte checkpoint costs address space, not RAM, and tensors can be used in place.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace loom {

class MappedFile {
 public:
  // Maps the whole file; throws loom::Error("<path>: <why>") when it cannot be opened, is not a
  // regular file, or is empty.
  static MappedFile open(const std::string& path);
  MappedFile() = default;
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  ~MappedFile();

  const uint8_t* data() const { return static_cast<const uint8_t*>(map_); }
  size_t size() const { return size_; }
  // Gives up ownership of the mapping; the caller must unmap_file() it.
  void* release();

 private:
  void* map_ = nullptr;
  size_t size_ = 0;
};

void unmap_file(void* map, size_t size);

}  // namespace loom
