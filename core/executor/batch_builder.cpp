#include "core/executor/batch_builder.hpp"

#include <algorithm>
#include <string>

#include "core/common/error.hpp"

namespace loom {

loom_attention_batch BuiltBatch::attention(int32_t group) const {
  if (group < 0 || group >= num_groups)
    throw Error("batch: group " + std::to_string(group) + " is outside the batch's " + std::to_string(num_groups));
  const auto g = static_cast<size_t>(group);
  loom_attention_batch b{};
  b.struct_size = sizeof(b);
  b.num_seqs = num_seqs();
  b.num_tokens = num_tokens();
  b.query_start = query_start.data();
  b.seq_lens = seq_lens.data();
  b.positions = positions.data();
  b.slot_mapping = slot_mapping.data() + g * token_ids.size();
  b.block_tables = block_tables.data() + g * seq_lens.size() * static_cast<size_t>(max_blocks_per_seq);
  b.max_blocks_per_seq = max_blocks_per_seq;
  b.block_size = block_size;
  return b;
}

BatchBuilder::BatchBuilder(int32_t block_size, int32_t num_groups) : block_size_(block_size), num_groups_(num_groups) {
  if (block_size <= 0) throw Error("batch builder: block_size " + std::to_string(block_size) + " must be positive");
  if (num_groups <= 0) throw Error("batch builder: num_groups " + std::to_string(num_groups) + " must be positive");
}

namespace {
// Sequence s's table of group g.
std::span<const int32_t> table_of(const SeqSchedule& seq, int32_t g) {
  return seq.group_tables.empty() ? seq.block_table : seq.group_tables[static_cast<size_t>(g)];
}
}  // namespace

void BatchBuilder::build(std::span<const SeqSchedule> seqs, BuiltBatch& out) const {
  size_t num_tokens = 0;
  int32_t max_blocks = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqSchedule& seq = seqs[s];
    if (seq.token_ids.empty()) throw Error("batch builder: sequence " + std::to_string(s) + " has no tokens to compute");
    if (seq.start_pos < 0)
      throw Error("batch builder: sequence " + std::to_string(s) + " has start position " + std::to_string(seq.start_pos));
    const int64_t seq_len = static_cast<int64_t>(seq.start_pos) + static_cast<int64_t>(seq.token_ids.size());
    const int64_t needed = (seq_len + block_size_ - 1) / block_size_;
    if (!seq.group_tables.empty() && static_cast<int32_t>(seq.group_tables.size()) != num_groups_)
      throw Error("batch builder: sequence " + std::to_string(s) + " has " + std::to_string(seq.group_tables.size()) +
                  " group tables for " + std::to_string(num_groups_) + " groups");
    for (int32_t g = 0; g < num_groups_; ++g) {
      const std::span<const int32_t> table = table_of(seq, g);
      if (static_cast<int64_t>(table.size()) < needed)
        throw Error("batch builder: sequence " + std::to_string(s) + " holds " + std::to_string(seq_len) +
                    " tokens but its block table has " + std::to_string(table.size()) + " blocks of " +
                    std::to_string(block_size_) + " (needs " + std::to_string(needed) + ")");
      max_blocks = std::max(max_blocks, static_cast<int32_t>(table.size()));
    }
    num_tokens += seq.token_ids.size();
  }

  const size_t groups = static_cast<size_t>(num_groups_);
  out.block_size = block_size_;
  out.num_groups = num_groups_;
  out.max_blocks_per_seq = max_blocks;
  out.token_ids.resize(num_tokens);
  out.positions.resize(num_tokens);
  out.slot_mapping.resize(groups * num_tokens);
  out.query_start.resize(seqs.size() + 1);
  out.seq_lens.resize(seqs.size());
  out.block_tables.assign(groups * seqs.size() * static_cast<size_t>(max_blocks), -1);
  out.logits_indices.clear();
  out.logits_top_k.clear();

  int32_t t = 0;
  out.query_start[0] = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqSchedule& seq = seqs[s];
    for (size_t i = 0; i < seq.token_ids.size(); ++i, ++t) {
      const int32_t pos = seq.start_pos + static_cast<int32_t>(i);
      out.token_ids[static_cast<size_t>(t)] = seq.token_ids[i];
      out.positions[static_cast<size_t>(t)] = pos;
      for (int32_t g = 0; g < num_groups_; ++g) {
        const int32_t block = table_of(seq, g)[static_cast<size_t>(pos / block_size_)];
        if (block < 0)
          throw Error("batch builder: sequence " + std::to_string(s) + " has no block for position " +
                      std::to_string(pos) + (num_groups_ > 1 ? " in group " + std::to_string(g) : std::string()));
        out.slot_mapping[static_cast<size_t>(g) * num_tokens + static_cast<size_t>(t)] = block * block_size_ + pos % block_size_;
      }
    }
    out.query_start[s + 1] = t;
    out.seq_lens[s] = seq.start_pos + static_cast<int32_t>(seq.token_ids.size());
    for (int32_t g = 0; g < num_groups_; ++g) {
      const std::span<const int32_t> table = table_of(seq, g);
      const size_t row = (static_cast<size_t>(g) * seqs.size() + s) * static_cast<size_t>(max_blocks);
      std::copy(table.begin(), table.end(), out.block_tables.begin() + static_cast<std::ptrdiff_t>(row));
    }
    if (seq.all_logits) {
      for (int32_t i = out.query_start[s]; i < t; ++i) out.logits_indices.push_back(i);
      out.logits_top_k.resize(out.logits_indices.size(), std::max(seq.top_k, 0));
    } else if (seq.need_logits) {
      out.logits_indices.push_back(t - 1);
      out.logits_top_k.push_back(std::max(seq.top_k, 0));
    }
  }
}

}  // namespace loom
