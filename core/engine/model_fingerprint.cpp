#include "core/engine/model_fingerprint.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <vector>

#include "core/common/error.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;

constexpr uint64_t kWhole = uint64_t{1} << 30;   // files up to 1 GiB are hashed whole
constexpr uint64_t kWindow = uint64_t{1} << 20;  // else 64 windows of 1 MiB
constexpr int kWindows = 64;

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ull;
  return h ^ (h >> 29);
}

uint64_t hash_bytes(uint64_t h, const char* data, size_t n) {
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::copy_n(data + i, 8, reinterpret_cast<char*>(&w));
    h = mix(h, w);
  }
  uint64_t tail = 0;
  for (size_t j = 0; i + j < n; ++j) tail |= static_cast<uint64_t>(static_cast<unsigned char>(data[i + j])) << (8 * j);
  return mix(h, tail ^ n);
}

uint64_t hash_range(uint64_t h, std::ifstream& in, uint64_t offset, uint64_t length) {
  std::vector<char> buf(1 << 20);
  in.seekg(static_cast<std::streamoff>(offset));
  while (length > 0 && in) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(length, buf.size()));
    in.read(buf.data(), static_cast<std::streamsize>(n));
    const size_t got = static_cast<size_t>(in.gcount());
    h = hash_bytes(h, buf.data(), got);
    if (got < n) break;
    length -= got;
  }
  return h;
}

uint64_t hash_file(uint64_t h, const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  LOOM_CHECK(in.good(), "model fingerprint: cannot read " + path.string());
  const uint64_t size = fs::file_size(path);
  h = mix(h, size);
  if (size <= kWhole) return hash_range(h, in, 0, size);
  for (int w = 0; w < kWindows; ++w) {
    in.clear();
    h = hash_range(h, in, (size - kWindow) / (kWindows - 1) * static_cast<uint64_t>(w), kWindow);
  }
  return h;
}

}  // namespace

uint64_t model_file_hash(const std::string& path) {
  uint64_t h = 0x6c6f6f6d2d6d6f64ull;
  if (!fs::is_directory(path)) return hash_file(h, path);
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(path))
    if (e.is_regular_file()) files.push_back(e.path());
  std::sort(files.begin(), files.end());
  for (const fs::path& f : files) {
    h = hash_bytes(h, f.filename().string().data(), f.filename().string().size());
    h = hash_file(h, f);
  }
  return h;
}

std::string model_fingerprint(uint64_t file_hash, const KvLayoutDesc& l) {
  char buf[192];
  int n = std::snprintf(buf, sizeof(buf), "%016llx-t%d-L%d-H%d-D%d-B%d", static_cast<unsigned long long>(file_hash),
                        static_cast<int>(l.kv_dtype), l.n_layers, l.n_kv_heads, l.head_dim, l.block_size);
  if (l.groups.num_groups() > 1) {
    uint64_t map = mix(0x6c6f6f6d2d67726full, static_cast<uint64_t>(l.groups.slots));
    for (int32_t layer = 0; layer < l.groups.n_layers(); ++layer) {
      map = mix(map, static_cast<uint64_t>(l.groups.group_of[static_cast<size_t>(layer)]));
      map = mix(map, static_cast<uint64_t>(l.groups.slot_of[static_cast<size_t>(layer)]));
    }
    std::snprintf(buf + n, sizeof(buf) - static_cast<size_t>(n), "-G%dx%d-%016llx", l.groups.num_groups(),
                  l.groups.slots, static_cast<unsigned long long>(map));
  }
  return buf;
}

}  // namespace loom
