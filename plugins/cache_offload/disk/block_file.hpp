// cache_offload/disk: one KV block in one file. The file is a fixed header then the block's
// bytes (the host's copy layout: per layer K then V):
//
//   offset  size  field
//   0       8     magic "LOOMKVB1"
//   8       4     format version (2: the four-lane checksum; files of another version are refused)
//   12      4     header size (kHeaderSize)
//   16      64    model fingerprint, NUL-padded (file hash + KV dtype + layout)
//   80      8     key (the tier key the host saved it under)
//   88      8     chained prefix hash of the block (0 for a swap entry)
//   96      8     cache salt of the chain
//   104     4     tokens in the block
//   108     4     reserved (0)
//   112     8     payload bytes
//   120     8     payload checksum
//   128     8     header checksum (over bytes [0, 128))
//   136     ...   payload
//
// Writes are atomic: the whole file goes to a temporary name in the same directory, then
// rename() puts it in place, so a reader (or a restart after kill -9) sees the old file, the new
// one, or none, never a half-written block under the real name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

namespace loom::disk_offload {

inline constexpr size_t kHeaderSize = 136;
inline constexpr size_t kFingerprintSize = 64;

struct BlockHeader {
  std::string fingerprint;
  uint64_t key = 0;
  uint64_t prefix_hash = 0;
  uint64_t salt = 0;
  int32_t num_tokens = 0;
  uint64_t payload_bytes = 0;
  uint64_t payload_checksum = 0;
};

// 64-bit checksum of a byte range (word-wise multiply-xorshift mixing; not cryptographic: it
// guards against torn writes, bit rot and truncation, not against an adversary).
uint64_t checksum(std::span<const std::byte> bytes);

// Writes header + payload to `path` atomically (temp file + rename; fsync of the file and of the
// directory when `sync`). Returns "" or the reason it failed (nothing is left behind then), with
// the errno in *error_number (ENOSPC: the disk is full).
std::string write_block_file(const std::filesystem::path& path, const BlockHeader& header,
                             std::span<const std::byte> payload, bool sync, int* error_number);

// Reads and checks a header: "" when it is well formed and names `fingerprint` and
// `payload_bytes`, else why not. `file_size` is checked against header + payload.
std::string read_header(const std::filesystem::path& path, const std::string& fingerprint, uint64_t payload_bytes,
                        BlockHeader& out);

// Reads a whole block file into payload (resized) after every check: header as above, the key,
// and the payload checksum. "" on success, else why it was refused.
std::string read_block_file(const std::filesystem::path& path, const std::string& fingerprint, uint64_t key,
                            uint64_t payload_bytes, std::vector<std::byte>& payload);

}  // namespace loom::disk_offload
