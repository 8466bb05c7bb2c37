// cache/paged, cache/radix: the chained block hash that names a full block's whole prefix.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

namespace loom::block_cache {

// Parent of a sequence's first block in the salted chain...
inline constexpr uint64_t kRootHash = 0x6c6f6f6d2d6b7631ull;
// ...and in the content-only chain (no salt), whose different root keeps the two chains apart:
// equal content hashes mean equal token prefixes, whatever their salts.
inline constexpr uint64_t kContentRootHash = 0x6c6f6f6d2d636f6eull;

// A 64-bit avalanche step (the MurmurHash3 finalizer): every input bit flips about half the
// output bits, so chaining it over a block's tokens spreads them over the whole hash.
inline uint64_t avalanche(uint64_t x) {
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return x;
}

// Hash of one full block in a chain: over its parent block's hash, the request's cache salt and
// the block's token ids.
inline uint64_t block_hash(uint64_t parent, uint64_t salt, std::span<const int32_t> tokens) {
  uint64_t h = avalanche(parent ^ 0x9e3779b97f4a7c15ull);
  h = avalanche(h ^ salt);
  for (int32_t t : tokens) h = avalanche(h ^ static_cast<uint32_t>(t));
  return avalanche(h ^ tokens.size());
}

// Block-table groups (cache interface 1.5): a block of group g holds other layers' K/V than the
// same tokens' block of group 0, so each group chains its blocks under a salt of its own. Group 0
// keys its blocks as before groups existed.
inline uint64_t group_salt(uint64_t salt, size_t group) {
  return group == 0 ? salt : salt ^ (0x9E3779B97F4A7C15ull * static_cast<uint64_t>(group));
}
// The root of group g's content-only chain.
inline uint64_t group_content_root(size_t group) {
  return group == 0 ? kContentRootHash : kContentRootHash ^ (0xC2B2AE3D27D4EB4Full * static_cast<uint64_t>(group));
}

}  // namespace loom::block_cache
