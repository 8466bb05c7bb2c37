// Block-table groups of a hybrid sliding-window model (cache interface 1.5). Gemma 3 has five
// local layers (window 512) per global one; were every layer to read K/V through one table, a
// local layer's old blocks could never go while the global layers still need theirs. So the
// layers split into groups of `slots` layers with one window each, every sequence holds one table
// per group, and a pool block holds the K/V of one group's layers: layer l lives in pool slot
// slot_of[l] of the blocks in its group's table. A local group's cache then releases what falls
// out of its window while the global group keeps the whole context (vLLM's hybrid allocator).
//
// The group size is the smallest window class's layer count, so every group is full but perhaps
// a class's last (Gemma 3 270M: 15 local + 3 global layers -> 6 groups of 3 slots; 1B: 22 + 4 ->
// 7 groups of 4, the last local one holding 2 layers and 2 idle slots). Windows are ordered
// ascending, so a full-attention group comes first: group 0 is what a one-table consumer sees.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace loom {

struct KvGroups {
  int32_t slots = 0;              // layers one pool block holds: the pool's layer dimension
  std::vector<int32_t> windows;   // [num_groups] each group's sliding window in tokens, 0: none
  std::vector<int32_t> group_of;  // [n_layers] the group whose table layer l reads
  std::vector<int32_t> slot_of;   // [n_layers] the pool slot layer l's K/V occupy

  int32_t num_groups() const { return static_cast<int32_t>(windows.size()); }
  int32_t n_layers() const { return static_cast<int32_t>(group_of.size()); }

  // One table for every layer: block b holds all n_layers layers (the layout before groups).
  static KvGroups single(int32_t n_layers);
  // Groups for the layers' windows ([n_layers], 0 = full attention): one table when every
  // layer has the same window, else the split above. Throws loom::Error on a negative window or
  // no layers.
  static KvGroups for_windows(std::span<const int32_t> layer_windows);
};

}  // namespace loom
