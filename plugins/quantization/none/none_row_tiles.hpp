// How the AVX-512 prefill kernels (none_panel_avx512.cpp, none_bf16_avx512.cpp) cut a row block
// of packed x into register tiles, and how a tile lands on a weight's last, partial panel. The
// x rows lie in groups of kTileGroup, [k][rows] each, the last group short; a tile is up to
// MaxGroups whole groups (4 x 6 rows by one panel, or 2 x 6 by two: 24 zmm accumulators) or the
// short group alone.
#pragma once

#include <cstdint>

#include "none_panel.hpp"

namespace loom_none {

constexpr int kTileGroup = 6;

// Calls tile.template operator()<NG, GR>(b0) for each tile of NG groups of GR rows from row b0,
// covering rows [0, mn) in increasing order: tiles of MaxGroups whole groups, then one of the
// whole groups left, then the short last group.
template <int MaxGroups, class Tile>
inline __attribute__((always_inline)) void for_each_row_tile(int64_t mn, Tile&& tile) {
  static_assert(MaxGroups >= 1 && MaxGroups <= 4);
  constexpr int G = kTileGroup;
  int64_t b0 = 0;
  for (; b0 + MaxGroups * G <= mn; b0 += MaxGroups * G) tile.template operator()<MaxGroups, G>(b0);
  const int64_t whole = (mn - b0) / G;  // < MaxGroups
  if constexpr (MaxGroups > 3)
    if (whole == 3) tile.template operator()<3, G>(b0);
  if constexpr (MaxGroups > 2)
    if (whole == 2) tile.template operator()<2, G>(b0);
  if constexpr (MaxGroups > 1)
    if (whole == 1) tile.template operator()<1, G>(b0);
  b0 += whole * G;
  switch (mn - b0) {  // the short last group
    case 5: tile.template operator()<1, 5>(b0); break;
    case 4: tile.template operator()<1, 4>(b0); break;
    case 3: tile.template operator()<1, 3>(b0); break;
    case 2: tile.template operator()<1, 2>(b0); break;
    case 1: tile.template operator()<1, 1>(b0); break;
    default: break;
  }
}

// micro(c, ldc) on the R x kPanel outputs at y (rows ys apart) whose first `cols` features exist:
// straight on y when all do, else through a local tile (loaded from y unless `first` starts the
// chains) with only the valid columns copied back.
template <int R, class Micro>
inline __attribute__((always_inline)) void on_panel_columns(float* y, int64_t ys, int64_t cols, bool first,
                                                            Micro&& micro) {
  if (cols == kPanel) {
    micro(y, ys);
    return;
  }
  alignas(64) float c[R * kPanel] = {};
  if (!first)
    for (int r = 0; r < R; ++r)
      for (int64_t j = 0; j < cols; ++j) c[r * kPanel + j] = y[r * ys + j];
  micro(c, kPanel);
  for (int r = 0; r < R; ++r)
    for (int64_t j = 0; j < cols; ++j) y[r * ys + j] = c[r * kPanel + j];
}

}  // namespace loom_none
