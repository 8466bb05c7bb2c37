// Packs the scheduled tokens of every sequence of a step into one flat, unpadded batch.
//
// Region map over the token axis (num_tokens = sum of every sequence's new tokens):
//   [query_start[0] = 0, query_start[1])   -> sequence 0's new tokens
//   [query_start[1],     query_start[2])   -> sequence 1's new tokens, ...
// A prefill chunk and a decode token differ only in how many tokens a sequence contributes.
//
// Block-table groups (cache interface 1.5): a hybrid sliding-window model's layers read K/V
// through one of several tables per sequence (kv_groups.hpp), so the slot mapping and the block
// tables come once per group, group-major.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

#include "loom/types.h"

namespace loom {

// One sequence's share of a step.
struct SeqSchedule {
  std::span<const int32_t> token_ids;    // tokens to compute this step
  int32_t start_pos = 0;                 // position of token_ids[0] (= num_computed_tokens)
  std::span<const int32_t> block_table;  // the sequence's KV block ids, in position order
  bool need_logits = false;              // logits of the last token are wanted (sampling)
  bool all_logits = false;               // logits of every token are wanted (prompt logprobs)
  // > 0: only the top_k best logits of each wanted row (the last token's, or every token's with
  // all_logits) are wanted, ids and values (model_executor.hpp HeadSelection), not whole rows.
  int32_t top_k = 0;
  // [num_groups] each group's table when the cache keeps several (group_tables[0] is
  // block_table); empty: every group uses block_table.
  std::span<const std::span<const int32_t>> group_tables;
};

// The flat batch. Owned vectors, reused across steps: no allocation once warmed up.
struct BuiltBatch {
  std::vector<int32_t> token_ids;       // [num_tokens]
  std::vector<int32_t> positions;       // [num_tokens]
  std::vector<int32_t> query_start;     // [num_seqs + 1]
  std::vector<int32_t> seq_lens;        // [num_seqs] context length after this step
  std::vector<int32_t> slot_mapping;    // [num_groups, num_tokens] block_id * block_size + offset
  std::vector<int32_t> block_tables;    // [num_groups, num_seqs, max_blocks_per_seq], padded with -1
  std::vector<int32_t> logits_indices;  // [n_logits] token indices whose logits are wanted, in order:
                                        // a sequence's last token, or all of them (all_logits)
  std::vector<int32_t> logits_top_k;    // [n_logits] the row's top_k; 0 = the whole row
  int32_t max_blocks_per_seq = 0;
  int32_t block_size = 0;
  int32_t num_groups = 1;

  int32_t num_tokens() const { return static_cast<int32_t>(token_ids.size()); }
  int32_t num_seqs() const { return static_cast<int32_t>(seq_lens.size()); }
  int32_t num_logits() const { return static_cast<int32_t>(logits_indices.size()); }
  // The batch as the attention of a layer in `group` sees it; points into this object's vectors
  // (valid while it lives and is not rebuilt).
  loom_attention_batch attention(int32_t group = 0) const;
};

class BatchBuilder {
 public:
  explicit BatchBuilder(int32_t block_size, int32_t num_groups = 1);

  // Rebuilds `out` from the sequences of a step. Throws loom::Error naming the sequence when one
  // has no tokens, a negative start position, a block table too short for its positions or
  // without a block where a token is written, or group tables not one per group.
  void build(std::span<const SeqSchedule> seqs, BuiltBatch& out) const;

  int32_t block_size() const { return block_size_; }
  int32_t num_groups() const { return num_groups_; }

 private:
  int32_t block_size_;
  int32_t num_groups_;
};

}  // namespace loom
