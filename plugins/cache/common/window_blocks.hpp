// cache/paged, cache/radix (cache/common): which blocks a sliding window reads (cache interface
// 1.5's block-table groups). A query at position p of a group with window w reads keys from
// p - w + 1 on, so the blocks wholly before that are never read again; a prefix hit is usable
// only where every group holds what the first token computed after it reads.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

namespace loom::block_cache {

// The first block a query at position `pos` reads: those before it lie wholly outside the
// window (0 without a window).
inline int64_t first_block_in_window(int64_t pos, int32_t window, int32_t block_size) {
  return window <= 0 ? 0 : std::max<int64_t>(0, pos - window + 1) / block_size;
}

// The longest prefix hit of at most n leading blocks that every group can serve: a group without
// a window needs blocks [0, hit), a windowed one only those the window of the token after the
// hit (position hit * block_size) reaches. held(g, i) says whether group g holds block i < n.
// Every prefix lookup asks, so a model without windows costs one scan and no allocation; with
// windows, shrinking a hit slides them back, so each length is checked on its own (prefix counts
// of the missing blocks make each check O(windowed groups)).
template <class Held>
int64_t longest_held_hit(int64_t n, std::span<const int32_t> windows, int32_t block_size, Held held) {
  std::vector<size_t> windowed;
  for (size_t g = 0; g < windows.size(); ++g) {
    if (windows[g] > 0) {
      windowed.push_back(g);
      continue;
    }
    for (int64_t i = 0; i < n; ++i) {  // a full-attention group's first missing block ends the hit
      if (!held(g, i)) {
        n = i;
        break;
      }
    }
  }
  if (windowed.empty() || n == 0) return n;
  // missing[w][i]: how many of windowed group w's blocks [0, i) are not held.
  std::vector<std::vector<int32_t>> missing(windowed.size(), std::vector<int32_t>(static_cast<size_t>(n) + 1, 0));
  for (size_t w = 0; w < windowed.size(); ++w)
    for (int64_t i = 0; i < n; ++i)
      missing[w][static_cast<size_t>(i) + 1] = missing[w][static_cast<size_t>(i)] + (held(windowed[w], i) ? 0 : 1);
  for (; n > 0; --n) {
    bool every = true;
    for (size_t w = 0; w < windowed.size() && every; ++w) {
      const int64_t first = first_block_in_window(n * block_size, windows[windowed[w]], block_size);
      every = missing[w][static_cast<size_t>(n)] == missing[w][static_cast<size_t>(first)];
    }
    if (every) break;
  }
  return n;
}

}  // namespace loom::block_cache
