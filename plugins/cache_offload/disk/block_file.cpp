// cache_offload/disk: block file format, atomic writes and checked reads (see block_file.hpp).
#include "block_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace loom::disk_offload {
namespace {

constexpr char kMagic[8] = {'L', 'O', 'O', 'M', 'K', 'V', 'B', '1'};
constexpr uint32_t kVersion = 2;  // 2: the four-lane checksum

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15ull;
  h ^= h >> 32;
  h *= 0xd6e8feb86659fd93ull;
  return h ^ (h >> 32);
}

template <class T>
void put(std::byte* at, T v) {
  std::memcpy(at, &v, sizeof(T));
}
template <class T>
T get(const std::byte* at) {
  T v;
  std::memcpy(&v, at, sizeof(T));
  return v;
}

std::string errno_text() { return std::strerror(errno); }

// Writes all of `data` to fd, retrying short writes.
bool write_all(int fd, const std::byte* data, size_t n) {
  while (n > 0) {
    const ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

bool read_all(int fd, std::byte* data, size_t n) {
  while (n > 0) {
    const ssize_t r = ::read(fd, data, n);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    data += r;
    n -= static_cast<size_t>(r);
  }
  return true;
}

std::string decode_header(const std::byte* h, uint64_t file_size, const std::string& fingerprint,
                          uint64_t payload_bytes, BlockHeader& out) {
  if (std::memcmp(h, kMagic, sizeof(kMagic)) != 0) return "not a Loom KV block file (bad magic)";
  if (get<uint32_t>(h + 8) != kVersion)
    return "format version " + std::to_string(get<uint32_t>(h + 8)) + ", not " + std::to_string(kVersion);
  if (get<uint32_t>(h + 12) != kHeaderSize) return "header size " + std::to_string(get<uint32_t>(h + 12));
  if (get<uint64_t>(h + 128) != checksum(std::span<const std::byte>(h, 128))) return "header checksum mismatch";
  const char* fp = reinterpret_cast<const char*>(h + 16);
  out.fingerprint.assign(fp, strnlen(fp, kFingerprintSize));
  if (out.fingerprint != fingerprint) return "written for another model or KV layout (" + out.fingerprint + ")";
  out.key = get<uint64_t>(h + 80);
  out.prefix_hash = get<uint64_t>(h + 88);
  out.salt = get<uint64_t>(h + 96);
  out.num_tokens = get<int32_t>(h + 104);
  out.payload_bytes = get<uint64_t>(h + 112);
  out.payload_checksum = get<uint64_t>(h + 120);
  if (out.payload_bytes != payload_bytes)
    return "block of " + std::to_string(out.payload_bytes) + " bytes, not " + std::to_string(payload_bytes);
  if (file_size != kHeaderSize + payload_bytes)
    return "file of " + std::to_string(file_size) + " bytes, not " + std::to_string(kHeaderSize + payload_bytes) +
           " (truncated or padded)";
  return {};
}

std::atomic<uint64_t> g_temp_serial{0};

}  // namespace

// Four lanes over 32-byte strides, folded at the end: with one lane the chain of dependent
// multiplies bounded it to about a byte a cycle, most of the time a block took to load.
uint64_t checksum(std::span<const std::byte> bytes) {
  const uint64_t seed = 0x6c6f6f6d2d63686bull ^ bytes.size();
  uint64_t lane[4] = {seed, seed + 0x9e3779b97f4a7c15ull, seed + 0x3c6ef372fe94f82aull, seed + 0xdaa66d2c7ddf743full};
  size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32)
    for (size_t k = 0; k < 4; ++k) lane[k] = mix(lane[k], get<uint64_t>(bytes.data() + i + 8 * k));
  uint64_t h = mix(mix(mix(lane[0], lane[1]), lane[2]), lane[3]);
  for (; i + 8 <= bytes.size(); i += 8) h = mix(h, get<uint64_t>(bytes.data() + i));
  uint64_t tail = 0;
  for (size_t j = 0; i + j < bytes.size(); ++j) tail |= static_cast<uint64_t>(bytes[i + j]) << (8 * j);
  return mix(h, tail);
}

std::string write_block_file(const std::filesystem::path& path, const BlockHeader& header,
                             std::span<const std::byte> payload, bool sync, int* error_number) {
  *error_number = 0;
  std::byte h[kHeaderSize] = {};
  std::memcpy(h, kMagic, sizeof(kMagic));
  put<uint32_t>(h + 8, kVersion);
  put<uint32_t>(h + 12, static_cast<uint32_t>(kHeaderSize));
  if (header.fingerprint.size() >= kFingerprintSize) return "fingerprint longer than 63 bytes";
  std::memcpy(h + 16, header.fingerprint.data(), header.fingerprint.size());
  put<uint64_t>(h + 80, header.key);
  put<uint64_t>(h + 88, header.prefix_hash);
  put<uint64_t>(h + 96, header.salt);
  put<int32_t>(h + 104, header.num_tokens);
  put<uint64_t>(h + 112, payload.size());
  put<uint64_t>(h + 120, checksum(payload));
  put<uint64_t>(h + 128, checksum(std::span<const std::byte>(h, 128)));

  // The temporary name is unique per process and write, and ends in .tmp: a start-up removes
  // whatever a killed writer left.
  std::filesystem::path temp = path;
  temp += "." + std::to_string(::getpid()) + "." + std::to_string(g_temp_serial.fetch_add(1)) + ".tmp";
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    *error_number = errno;
    return "open " + temp.string() + ": " + errno_text();
  }
  bool ok = write_all(fd, h, kHeaderSize) && write_all(fd, payload.data(), payload.size());
  std::string why = ok ? "" : "write " + temp.string() + ": " + errno_text();
  if (ok && sync && ::fsync(fd) != 0) {
    ok = false;
    why = "fsync " + temp.string() + ": " + errno_text();
  }
  if (::close(fd) != 0 && ok) {
    ok = false;
    why = "close " + temp.string() + ": " + errno_text();
  }
  if (ok && ::rename(temp.c_str(), path.c_str()) != 0) {
    ok = false;
    why = "rename to " + path.string() + ": " + errno_text();
  }
  if (!ok) {
    *error_number = errno;
    ::unlink(temp.c_str());
    return why;
  }
  if (sync) {
    const int dir = ::open(path.parent_path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir >= 0) {
      (void)::fsync(dir);
      ::close(dir);
    }
  }
  return {};
}

std::string read_header(const std::filesystem::path& path, const std::string& fingerprint, uint64_t payload_bytes,
                        BlockHeader& out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "open: " + errno_text();
  std::byte h[kHeaderSize];
  const off_t size = ::lseek(fd, 0, SEEK_END);
  const bool got = size >= static_cast<off_t>(kHeaderSize) && ::lseek(fd, 0, SEEK_SET) == 0 && read_all(fd, h, kHeaderSize);
  ::close(fd);
  if (!got) return "shorter than its header (" + std::to_string(size < 0 ? 0 : size) + " bytes)";
  return decode_header(h, static_cast<uint64_t>(size), fingerprint, payload_bytes, out);
}

std::string read_block_file(const std::filesystem::path& path, const std::string& fingerprint, uint64_t key,
                            uint64_t payload_bytes, std::vector<std::byte>& payload) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "open: " + errno_text();
  const off_t size = ::lseek(fd, 0, SEEK_END);
  std::byte h[kHeaderSize];
  bool got = size >= static_cast<off_t>(kHeaderSize) && ::lseek(fd, 0, SEEK_SET) == 0 && read_all(fd, h, kHeaderSize);
  BlockHeader header;
  std::string why = got ? decode_header(h, static_cast<uint64_t>(size), fingerprint, payload_bytes, header)
                        : "shorter than its header (" + std::to_string(size < 0 ? 0 : size) + " bytes)";
  if (why.empty() && header.key != key) why = "holds key " + std::to_string(header.key) + ", not " + std::to_string(key);
  if (why.empty()) {
    payload.resize(payload_bytes);
    got = read_all(fd, payload.data(), payload.size());
    if (!got) why = "payload cut short";
    else if (checksum(payload) != header.payload_checksum) why = "payload checksum mismatch";
  }
  ::close(fd);
  return why;
}

}  // namespace loom::disk_offload
