// How the AVX-512 prefill kernels (none_panel_avx512.cpp, none_bf16_avx512.cpp) cut a row block
// of packed x into register tiles, and how a tile lands on a weight's last, partial panel. The
// x rows lie in groups of kTileGroup, [k][rows] each, the last group short; a tile is up to
// MaxGroups whole groups (4 x 6 rows by one panel, or 2 x 6 by two: 24 zmm accumulators), or the
// short group by several panels.
#pragma once

#include <cstdint>

#include "none_panel.hpp"

namespace loom_none {

constexpr int kTileGroup = 6;

// Calls tile.template operator()<NG, GR>(b0) for each tile of NG groups of GR = kTileGroup rows
// from row b0, covering the `whole` rows (a multiple of kTileGroup) in increasing order: tiles of
// MaxGroups groups, then one of the groups left. The short last group of a row block goes to
// for_each_short_group_tile instead.
template <int MaxGroups, class Tile>
inline __attribute__((always_inline)) void for_each_row_tile(int64_t whole, Tile&& tile) {
  static_assert(MaxGroups >= 1 && MaxGroups <= 4);
  constexpr int G = kTileGroup;
  int64_t b0 = 0;
  for (; b0 + MaxGroups * G <= whole; b0 += MaxGroups * G) tile.template operator()<MaxGroups, G>(b0);
  const int64_t left = (whole - b0) / G;  // < MaxGroups
  if constexpr (MaxGroups > 3)
    if (left == 3) tile.template operator()<3, G>(b0);
  if constexpr (MaxGroups > 2)
    if (left == 2) tile.template operator()<2, G>(b0);
  if constexpr (MaxGroups > 1)
    if (left == 1) tile.template operator()<1, G>(b0);
}

// The short last group of a row block (1-5 rows, [k][rows]) by several panels at once: one panel
// would give it 1-5 accumulator chains, too few to cover the FMA latency, and a row block of 25
// rows took 28% longer than one of 24 (loom-bench model, llama-125m f16, 2 threads, Zen 4: one
// more batched-decode row cost 9.6 ms a step). Calls run.template operator()<R, P>(p) for panels
// [p, p + P) of [p_begin, p_end): P = Panels[R - 1] at a time while whole ones (below `full`)
// remain, as the decode kernels take them (AVX-512: 8/6/4/4/4, 8-20 zmm accumulators; AVX2:
// 4/3/2/1/1, 8-12 ymm pairs), then one at a time (P = 1; the caller lands a partial panel).
template <int P1, int P2, int P3, int P4, int P5, class Run>
inline __attribute__((always_inline)) void for_each_short_group_tile(int64_t rows, int64_t p_begin, int64_t p_end,
                                                                     int64_t full, Run&& run) {
  const auto panels = [&]<int R, int P>() {
    int64_t p = p_begin;
    if constexpr (P > 1)
      for (; p + P <= p_end && p + P <= full; p += P) run.template operator()<R, P>(p);
    for (; p < p_end; ++p) run.template operator()<R, 1>(p);
  };
  switch (rows) {
    case 1: panels.template operator()<1, P1>(); break;
    case 2: panels.template operator()<2, P2>(); break;
    case 3: panels.template operator()<3, P3>(); break;
    case 4: panels.template operator()<4, P4>(); break;
    case 5: panels.template operator()<5, P5>(); break;
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
