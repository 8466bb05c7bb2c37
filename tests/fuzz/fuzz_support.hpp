// Shared by the libFuzzer targets: test data paths and the one way an input is split into a
// selector byte and the rest, so a corpus file's first byte says which parser it is for.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>

namespace loom::fuzz {

inline std::string data_path(const std::string& rel) { return std::string(LOOM_TEST_DATA) + "/" + rel; }

inline std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) std::abort();  // the target is misconfigured, not the input at fault
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Selected {
  uint8_t selector = 0;
  std::string_view rest;
};

inline Selected select(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  return {data[0], std::string_view(reinterpret_cast<const char*>(data) + 1, size - 1)};
}

}  // namespace loom::fuzz
