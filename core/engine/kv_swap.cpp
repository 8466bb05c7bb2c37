#include "core/engine/kv_swap.hpp"

#include <algorithm>
#include <string>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "loom/cache_offload.h"

namespace loom {
namespace {

// Swap keys: top bit set (other users of the tier, e.g. prefix spill by content hash, keep it
// clear), then a 39-bit serial per swapped request, then a 24-bit block index.
constexpr uint64_t kSwapKeyTag = uint64_t{1} << 63;
constexpr int kBlockIndexBits = 24;
constexpr uint64_t kSerialMask = (uint64_t{1} << 39) - 1;

int32_t ceil_div(int32_t a, int32_t b) { return (a + b - 1) / b; }

}  // namespace

KvSwapper::KvSwapper(const LoadedPlugin& tier, int64_t bytes_per_block, std::vector<int32_t> group_windows)
    : tier_(&tier), bytes_per_block_(bytes_per_block), windows_(std::move(group_windows)) {
  (void)tier_->vtable<loom_cache_offload_vtable>();  // throws unless it is a cache_offload plugin
  LOOM_CHECK(bytes_per_block_ > 0, "KvSwapper: bytes_per_block must be positive, got " +
                                       std::to_string(bytes_per_block_));
  LOOM_CHECK(!windows_.empty(), "KvSwapper: no block-table group");
}

uint64_t KvSwapper::key(const Swapped& s, size_t group, int32_t block_index) {
  LOOM_CHECK(block_index >= 0 && block_index < (int32_t{1} << kBlockIndexBits),
             "KvSwapper: block index " + std::to_string(block_index) + " does not fit a swap key");
  const uint64_t serial = s.serial + group;
  return kSwapKeyTag | ((serial & kSerialMask) << kBlockIndexBits) | static_cast<uint64_t>(block_index);
}

// A failed drop leaves the entry taking room in the tier, never in the pool, and nothing loads
// it again (its key is never reused): logged, not thrown, so no release or preemption fails on it.
void KvSwapper::drop_blocks(const Swapped& s, int32_t begin, int32_t end) const {
  for (size_t g = 0; g < s.first_saved.size(); ++g) {
    for (int32_t i = std::max(begin, s.first_saved[g]); i < end; ++i) {
      std::string message;
      if (tier_->try_call(&message, &loom_cache_offload_vtable::drop, key(s, g, i)) != LOOM_OK)
        LOOM_LOG_WARN("plugin cache_offload '{}': drop failed (the entry stays in the tier): {}", tier_->name(), message);
    }
  }
}

bool KvSwapper::all_present(const Swapped& s, int32_t begin, int32_t end) const {
  for (size_t g = 0; g < s.first_saved.size(); ++g) {
    for (int32_t i = std::max(begin, s.first_saved[g]); i < end; ++i) {
      int32_t present = 0;
      tier_->call("contains", &loom_cache_offload_vtable::contains, key(s, g, i), &present);
      if (present == 0) return false;
    }
  }
  return true;
}

int32_t KvSwapper::entries_in(const Swapped& s, int32_t begin, int32_t end) {
  int32_t n = 0;
  for (int32_t first : s.first_saved) n += std::max(0, end - std::max(begin, first));
  return n;
}

std::vector<int32_t> KvSwapper::first_held(GroupTables tables, int32_t num_blocks, uint64_t request_id) const {
  std::vector<int32_t> first(tables.size(), 0);
  for (size_t g = 0; g < tables.size(); ++g) {
    LOOM_CHECK(static_cast<size_t>(num_blocks) <= tables[g].size(),
               "swap_out: request " + std::to_string(request_id) + " holds " + std::to_string(tables[g].size()) +
                   " blocks in group " + std::to_string(g) + ", fewer than the " + std::to_string(num_blocks) +
                   " its tokens need");
    while (first[g] < num_blocks && tables[g][static_cast<size_t>(first[g])] == -1) ++first[g];
    for (int32_t i = first[g]; i < num_blocks; ++i)
      LOOM_CHECK(tables[g][static_cast<size_t>(i)] >= 0,
                 "swap_out: request " + std::to_string(request_id) + "'s group " + std::to_string(g) +
                     " table names block " + std::to_string(tables[g][static_cast<size_t>(i)]) + " at " +
                     std::to_string(i) + ", after a held one");
    LOOM_CHECK(first[g] == 0 || windows_[g] > 0, "swap_out: request " + std::to_string(request_id) + "'s group " +
                                                     std::to_string(g) + " has no window but released blocks");
  }
  return first;
}

// A query at position p reads group g's keys from p - window + 1 on: none of the released blocks
// [0, first_saved[g]) once p >= first_saved[g] * bs + window - 1.
int32_t KvSwapper::resume_point(const std::vector<int32_t>& first_saved, int32_t block_size) const {
  int32_t from = 0;
  for (size_t g = 0; g < first_saved.size(); ++g)
    if (first_saved[g] > 0) from = std::max(from, first_saved[g] * block_size + windows_[g] - 1);
  return from;
}

int32_t KvSwapper::swapped_tokens(uint64_t request_id) const {
  const auto it = swapped_.find(request_id);
  return it == swapped_.end() ? 0 : it->second.num_tokens;
}

void KvSwapper::forget(uint64_t request_id) {
  const auto it = swapped_.find(request_id);
  if (it == swapped_.end()) return;
  const Swapped s = it->second;
  swapped_.erase(it);
  drop_blocks(s, s.first_block, s.end_block);
}

int32_t KvSwapper::swap_out(uint64_t request_id, GroupTables tables, int32_t num_tokens, int32_t block_size) {
  LOOM_CHECK(block_size > 0, "swap_out: block_size must be positive, got " + std::to_string(block_size));
  LOOM_CHECK(tables.size() == windows_.size(), "swap_out: " + std::to_string(tables.size()) + " tables for " +
                                                   std::to_string(windows_.size()) + " block-table groups");
  const auto it = swapped_.find(request_id);
  // Tokens an earlier swap_in loaded past num_tokens (the rest of the block holding its last
  // restored token) are valid in these same blocks: save them too.
  if (it != swapped_.end() && num_tokens > 0 && num_tokens <= it->second.pool_valid_end) {
    num_tokens = it->second.pool_valid_end;
  }
  if (num_tokens <= 0) {
    forget(request_id);
    return 0;
  }
  const int32_t num_blocks = ceil_div(num_tokens, block_size);
  const std::vector<int32_t> first_saved = first_held(tables, num_blocks, request_id);

  // Preempted again while still restoring: when the pool holds exactly the blocks up to where
  // the tier's entries resume (and no group's old entries start past them), saving those
  // completes the range and the entries stay useful.
  Swapped s;
  const bool continues = it != swapped_.end() && num_tokens % block_size == 0 &&
                         it->second.first_block <= num_blocks && num_blocks <= it->second.end_block &&
                         std::all_of(it->second.first_saved.begin(), it->second.first_saved.end(),
                                     [&](int32_t first) { return first <= num_blocks; });
  if (continues) {
    s = it->second;
    drop_blocks(s, s.first_block, num_blocks);  // saved again below, or released since
    s.first_block = 0;
    s.num_tokens = std::max(s.num_tokens, num_tokens);
  } else {
    forget(request_id);
    s.serial = next_serial_;
    next_serial_ += windows_.size();
    s.num_tokens = num_tokens;
    s.end_block = num_blocks;
  }
  s.first_saved = first_saved;
  s.resume_from = resume_point(first_saved, block_size);
  s.pool_valid_end = 0;          // the request's blocks are the pool's again
  swapped_.erase(request_id);  // re-inserted only when every block is in the tier
  // Invariant from here: s.end_block == ceil(s.num_tokens / block_size).

  // A tier smaller than the request would evict the request's own first blocks (and others'
  // entries) only for the save to be undone: refuse up front.
  loom_cache_offload_usage usage{};
  usage.struct_size = sizeof(usage);
  tier_->call("usage", &loom_cache_offload_vtable::usage, &usage);
  if (usage.capacity_bytes > 0 &&
      static_cast<int64_t>(entries_in(s, 0, s.end_block)) * bytes_per_block_ > usage.capacity_bytes) {
    drop_blocks(s, num_blocks, s.end_block);  // leftovers of an earlier swap-out, if merged
    return 0;
  }

  for (int32_t i = 0; i < num_blocks; ++i) {
    for (size_t g = 0; g < tables.size(); ++g) {
      if (i < s.first_saved[g]) continue;
      std::string message;
      const loom_status status = tier_->try_call(&message, &loom_cache_offload_vtable::save, key(s, g, i),
                                                 tables[g][static_cast<size_t>(i)]);
      if (status == LOOM_OK) continue;
      drop_blocks(s, 0, s.end_block);
      if (status == LOOM_ERR_OUT_OF_MEMORY) return 0;
      throw Error("plugin cache_offload '" + tier_->name() + "': save: " + message, status);
    }
  }
  // All or nothing: a tier that evicts may have pushed out one of the blocks just saved.
  if (!all_present(s, 0, s.end_block)) {
    drop_blocks(s, 0, s.end_block);
    return 0;
  }
  swapped_out_blocks_ += entries_in(s, 0, num_blocks);
  swapped_.emplace(request_id, s);
  return s.num_tokens;
}

int32_t KvSwapper::swap_in(uint64_t request_id, GroupTables new_tables, int32_t start_token, int32_t max_tokens,
                           int32_t block_size) {
  LOOM_CHECK(block_size > 0, "swap_in: block_size must be positive, got " + std::to_string(block_size));
  LOOM_CHECK(new_tables.size() == windows_.size(), "swap_in: " + std::to_string(new_tables.size()) +
                                                       " tables for " + std::to_string(windows_.size()) +
                                                       " block-table groups");
  const auto it = swapped_.find(request_id);
  if (it == swapped_.end() || start_token < 0) return 0;
  Swapped& s = it->second;

  // Blocks that end at or before start_token are in the pool now: their entries can never be
  // restored (later starts only grow), so give the tier its room back.
  const int32_t first_needed = std::min(ceil_div(start_token, block_size), s.end_block);
  if (first_needed > s.first_block) {
    drop_blocks(s, s.first_block, first_needed);
    s.first_block = first_needed;
  }
  const int32_t chunk_end = start_token + std::max(0, max_tokens);
  // First token not in the pool: past what an earlier swap_in loaded when start_token is inside it.
  int32_t pos = start_token <= s.pool_valid_end ? s.pool_valid_end : start_token;
  if (pos < chunk_end && pos % block_size == 0 && pos / block_size == s.first_block && s.first_block < s.end_block) {
    // Whole blocks, the one holding the chunk's last token included: its tokens past the chunk
    // stay valid in the pool for the next step's swap_in (nothing else writes the request's blocks).
    int32_t end = ceil_div(std::min(chunk_end, s.num_tokens), block_size);
    for (std::span<const int32_t> table : new_tables) end = std::min(end, static_cast<int32_t>(table.size()));
    // A released block's stand-in in the new table is never written: only a restore that reaches
    // resume_from leaves it where no query reads it; a shorter one restores nothing.
    const bool passes_released =
        s.first_block < *std::max_element(s.first_saved.begin(), s.first_saved.end());
    const int32_t reach = std::min({end * block_size, s.num_tokens, chunk_end});
    if (!passes_released || reach >= s.resume_from) {
      int32_t loaded = s.first_block;
      bool evicted = false;
      for (; loaded < end; ++loaded) {
        for (size_t g = 0; g < new_tables.size(); ++g) {
          if (loaded < s.first_saved[g]) continue;
          const int32_t block = new_tables[g][static_cast<size_t>(loaded)];
          LOOM_CHECK(block >= 0, "swap_in: request " + std::to_string(request_id) + "'s new group " +
                                     std::to_string(g) + " table has no block at " + std::to_string(loaded));
          std::string message;
          const loom_status status =
              tier_->try_call(&message, &loom_cache_offload_vtable::load, key(s, g, loaded), block);
          if (status == LOOM_OK) {
            ++swapped_in_blocks_;
            continue;
          }
          if (status != LOOM_ERR_NOT_FOUND) {
            throw Error("plugin cache_offload '" + tier_->name() + "': load: " + message, status);
          }
          evicted = true;  // the tier let this entry go: the range restorable now ends at this block
          break;
        }
        if (evicted) break;
      }
      // Loaded blocks live in the pool again; the evicted block's other entries cannot be used.
      const int32_t used = evicted ? loaded + 1 : loaded;
      drop_blocks(s, s.first_block, used);
      if (passes_released && std::min(loaded * block_size, s.num_tokens) < s.resume_from) {
        forget(request_id);  // cut short where a window would read a released block: recompute
        return 0;
      }
      if (loaded > s.first_block) {
        pos = std::min(loaded * block_size, s.num_tokens);
        s.pool_valid_end = pos;
      }
      s.first_block = used;
    }
  }
  const int32_t restored = std::max(0, std::min(pos, chunk_end) - start_token);
  if (s.first_block >= s.end_block && s.pool_valid_end <= start_token + restored) swapped_.erase(it);
  return restored;
}

int32_t restore_swapped(KvSwapper& swapper, const SwapInStep& step, int32_t block_size) {
  if (!swapper.has_swapped(step.request_id) || step.num_new_tokens <= 0) return 0;
  int32_t max_tokens = step.num_new_tokens;
  // The chunk that reaches the end must still compute the last token: its logits are sampled.
  if (step.num_computed_tokens + step.num_new_tokens >= step.num_tokens) {
    max_tokens = std::min(max_tokens, step.num_tokens - 1 - step.num_computed_tokens);
  }
  return swapper.swap_in(step.request_id, step.tables, step.num_computed_tokens, std::max(0, max_tokens),
                         block_size);
}

std::vector<int32_t> restore_swapped(KvSwapper& swapper, std::span<const SwapInStep> steps, int32_t block_size) {
  std::vector<int32_t> restored;
  restored.reserve(steps.size());
  for (const SwapInStep& step : steps) restored.push_back(restore_swapped(swapper, step, block_size));
  return restored;
}

}  // namespace loom
