#include "core/executor/kv_groups.hpp"

#include <algorithm>
#include <map>
#include <string>

#include "core/common/error.hpp"

namespace loom {

KvGroups KvGroups::single(int32_t n_layers) {
  if (n_layers <= 0) throw Error("kv groups: a model of " + std::to_string(n_layers) + " layers");
  KvGroups g;
  g.slots = n_layers;
  g.windows = {0};
  g.group_of.assign(static_cast<size_t>(n_layers), 0);
  for (int32_t l = 0; l < n_layers; ++l) g.slot_of.push_back(l);
  return g;
}

KvGroups KvGroups::for_windows(std::span<const int32_t> layer_windows) {
  const auto n_layers = static_cast<int32_t>(layer_windows.size());
  std::map<int32_t, int32_t> count;  // window -> layers, windows ascending
  for (int32_t w : layer_windows) {
    if (w < 0) throw Error("kv groups: a layer's window " + std::to_string(w) + " is negative");
    ++count[w];
  }
  KvGroups g = single(n_layers);
  if (count.size() == 1) {
    g.windows = {count.begin()->first};
    return g;
  }
  g.slots = n_layers;
  for (const auto& [w, n] : count) g.slots = std::min(g.slots, n);
  std::map<int32_t, int32_t> first_group, seen;  // window -> its first group, layers placed so far
  g.windows.clear();
  for (const auto& [w, n] : count) {
    first_group[w] = g.num_groups();
    for (int32_t k = 0; k < (n + g.slots - 1) / g.slots; ++k) g.windows.push_back(w);
  }
  for (int32_t l = 0; l < n_layers; ++l) {
    const int32_t w = layer_windows[static_cast<size_t>(l)];
    const int32_t k = seen[w]++;
    g.group_of[static_cast<size_t>(l)] = first_group[w] + k / g.slots;
    g.slot_of[static_cast<size_t>(l)] = k % g.slots;
  }
  return g;
}

}  // namespace loom
