// Preemption by swap: a preempted request's KV blocks are copied into the cache_offload tier
// before the pool reuses them, and copied back into its new blocks when it is scheduled again,
// so only what the tier could not keep is recomputed.
//
// Region map of one swapped request (block size bs, block index i holds tokens [i*bs, (i+1)*bs)):
//
//   tokens  [0 ......... first_block*bs) [first_block*bs ........ num_tokens) [num_tokens ...
//           in the pool: computed, or    saved in the tier, one entry per    never saved
//           loaded (up to pool_valid_    block and group, key (serial + g,
//           end); entries dropped        block index); the last block may
//                                        be partial
//
// Block-table groups (cache interface 1.5): the request holds one table per group, and entry i of
// group g holds tokens [i*bs, (i+1)*bs) of that group's layers. A windowed group's leading entries
// may be -1: released, because no query from the next token on reads them. They are not saved,
// and restoring copies nothing into their stand-ins in the new table -- which is sound only when
// computing resumes where no window reaches them: from resume_from on (see swap_in).
//
// swap_in() restores whole blocks into the request's new blocks and drops their entries; what
// the step's chunk does not reach stays for a later step (chunked prefill restores a long prompt
// over several steps). A tier that evicted an entry ends the restorable range there.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "core/plugin/loaded_plugin.hpp"

namespace loom {

// A request's block tables, one per group, group 0 first: [num_groups][blocks].
using GroupTables = std::span<const std::span<const int32_t>>;

class KvSwapper {
 public:
  // tier: a created cache_offload plugin (outlives this object) whose copy ops move blocks of
  // bytes_per_block bytes (one group's layers) over the pool the block tables index.
  // group_windows: [num_groups] each group's sliding window in tokens, 0 = full attention.
  KvSwapper(const LoadedPlugin& tier, int64_t bytes_per_block, std::vector<int32_t> group_windows = {0});

  // Saves the blocks holding the first num_tokens tokens (tables[g][0, ceil(num_tokens/bs)) of
  // every group, but the -1 entries a window released) and returns the tokens now restorable for
  // the request: num_tokens, or more when the blocks hold tokens an earlier swap_in loaded past
  // num_tokens, or entries still held from an earlier swap-out continue them. tables are the
  // request's live tables (the cache's views, read before the host frees the blocks:
  // SwapCoordinator::preempt); a -1 entry after a held one of its group throws loom::Error.
  // All or nothing: 0, with nothing of the request left in the tier, when the tier cannot hold
  // every block (it is too small, refuses with LOOM_ERR_OUT_OF_MEMORY, or evicted one of them
  // while saving the rest). Other tier failures throw loom::Error.
  int32_t swap_out(uint64_t request_id, GroupTables tables, int32_t num_tokens, int32_t block_size);

  // Restores what was saved of tokens [start_token, start_token + max_tokens) into new_tables
  // (same groups, same block indices) and returns how many tokens, counted from start_token, are
  // now in the pool. Blocks move whole: the one holding the range's last token is loaded
  // entirely, and its tokens past the range count for the next call, whose start_token then lies
  // inside it. Otherwise restoring starts only at a block-aligned start_token (else 0), and stops
  // at the first block whose entry (of any group) the tier evicted. Entries of tokens before
  // start_token are dropped: those tokens are in the pool now.
  // A restore that passes a block a window released must reach resume_from (the first token whose
  // every window starts past the released blocks) in this call: else it restores nothing, and
  // when an evicted entry cuts it short, the request's entries are dropped (it recomputes).
  int32_t swap_in(uint64_t request_id, GroupTables new_tables, int32_t start_token, int32_t max_tokens,
                  int32_t block_size);

  // The same for a swapper of one group (a model without block-table groups).
  int32_t swap_out(uint64_t request_id, std::span<const int32_t> block_table, int32_t num_tokens, int32_t block_size) {
    const std::span<const int32_t> one[] = {block_table};
    return swap_out(request_id, one, num_tokens, block_size);
  }
  int32_t swap_in(uint64_t request_id, std::span<const int32_t> new_block_table, int32_t start_token,
                  int32_t max_tokens, int32_t block_size) {
    const std::span<const int32_t> one[] = {new_block_table};
    return swap_in(request_id, one, start_token, max_tokens, block_size);
  }

  // Drops the request's entries (finished, aborted). Unknown ids are not an error.
  void forget(uint64_t request_id);

  bool has_swapped(uint64_t request_id) const { return swapped_.count(request_id) != 0; }
  // Tokens of the request restorable from the tier (counted from token 0); 0 when none.
  int32_t swapped_tokens(uint64_t request_id) const;
  // Pool blocks (one group's layers each) copied to and from the tier.
  int64_t swapped_out_blocks_total() const { return swapped_out_blocks_; }
  int64_t swapped_in_blocks_total() const { return swapped_in_blocks_; }

 private:
  struct Swapped {
    uint64_t serial = 0;      // key namespace of group 0's entries; group g's is serial + g
    int32_t num_tokens = 0;   // tokens [0, num_tokens) were saved
    // Group g has entries for blocks [max(first_block, first_saved[g]), end_block): its blocks
    // before first_saved[g] were released by its window and never saved.
    int32_t first_block = 0;
    int32_t end_block = 0;
    std::vector<int32_t> first_saved;  // [num_groups]
    int32_t resume_from = 0;     // a restore passing a released block must reach it (swap_in)
    int32_t pool_valid_end = 0;  // tokens before it were loaded into the current blocks (0: none)
  };

  static uint64_t key(const Swapped& s, size_t group, int32_t block_index);
  void drop_blocks(const Swapped& s, int32_t begin, int32_t end) const;
  // Whether every entry of blocks [begin, end) is in the tier.
  bool all_present(const Swapped& s, int32_t begin, int32_t end) const;
  // Entries of blocks [begin, end), over the groups.
  static int32_t entries_in(const Swapped& s, int32_t begin, int32_t end);
  // Each group's first held entry among the first num_blocks; throws on a -1 after a held one.
  std::vector<int32_t> first_held(GroupTables tables, int32_t num_blocks, uint64_t request_id) const;
  // The first token whose window, in every group, starts past the group's released blocks.
  int32_t resume_point(const std::vector<int32_t>& first_saved, int32_t block_size) const;

  const LoadedPlugin* tier_;
  int64_t bytes_per_block_;
  std::vector<int32_t> windows_;  // [num_groups]
  std::unordered_map<uint64_t, Swapped> swapped_;  // request id -> its entries
  uint64_t next_serial_ = 1;
  int64_t swapped_out_blocks_ = 0;
  int64_t swapped_in_blocks_ = 0;
};

// One request scheduled this step, as the engine holds it right after adding the step's
// num_cached_tokens (prefix hit) to num_computed_tokens.
struct SwapInStep {
  uint64_t request_id = 0;
  int32_t num_computed_tokens = 0;  // tokens already in the pool, cached prefix included
  int32_t num_new_tokens = 0;       // the scheduler's chunk for this step
  int32_t num_tokens = 0;           // prompt + generated so far
  GroupTables tables;               // after this step's allocation: each covers the chunk
};

// Tokens of the step's chunk to take from the tier instead of computing: restores from
// num_computed_tokens, at most the whole chunk, but never the request's last token when the chunk
// reaches num_tokens (its logits are needed, so it must run through the model). The engine adds
// the result to num_computed_tokens and computes only num_new_tokens - result tokens this step.
int32_t restore_swapped(KvSwapper& swapper, const SwapInStep& step, int32_t block_size);
// The same for every entry of a step, in order.
std::vector<int32_t> restore_swapped(KvSwapper& swapper, std::span<const SwapInStep> steps, int32_t block_size);

}  // namespace loom
