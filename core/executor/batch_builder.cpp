#include "core/executor/batch_builder.hpp"

#include <algorithm>
#include <string>

#include "core/common/error.hpp"

namespace loom {

loom_attention_batch BuiltBatch::attention() const {
  loom_attention_batch b{};
  b.struct_size = sizeof(b);
  b.num_seqs = num_seqs();
  b.num_tokens = num_tokens();
  b.query_start = query_start.data();
  b.seq_lens = seq_lens.data();
  b.positions = positions.data();
  b.slot_mapping = slot_mapping.data();
  b.block_tables = block_tables.data();
  b.max_blocks_per_seq = max_blocks_per_seq;
  b.block_size = block_size;
  return b;
}

BatchBuilder::BatchBuilder(int32_t block_size) : block_size_(block_size) {
  if (block_size <= 0) throw Error("batch builder: block_size " + std::to_string(block_size) + " must be positive");
}

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
    if (static_cast<int64_t>(seq.block_table.size()) < needed)
      throw Error("batch builder: sequence " + std::to_string(s) + " holds " + std::to_string(seq_len) +
                  " tokens but its block table has " + std::to_string(seq.block_table.size()) + " blocks of " +
                  std::to_string(block_size_) + " (needs " + std::to_string(needed) + ")");
    num_tokens += seq.token_ids.size();
    max_blocks = std::max(max_blocks, static_cast<int32_t>(seq.block_table.size()));
  }

  out.block_size = block_size_;
  out.max_blocks_per_seq = max_blocks;
  out.token_ids.resize(num_tokens);
  out.positions.resize(num_tokens);
  out.slot_mapping.resize(num_tokens);
  out.query_start.resize(seqs.size() + 1);
  out.seq_lens.resize(seqs.size());
  out.block_tables.assign(seqs.size() * static_cast<size_t>(max_blocks), -1);
  out.logits_indices.clear();

  int32_t t = 0;
  out.query_start[0] = 0;
  for (size_t s = 0; s < seqs.size(); ++s) {
    const SeqSchedule& seq = seqs[s];
    for (size_t i = 0; i < seq.token_ids.size(); ++i, ++t) {
      const int32_t pos = seq.start_pos + static_cast<int32_t>(i);
      const int32_t block = seq.block_table[static_cast<size_t>(pos / block_size_)];
      if (block < 0)
        throw Error("batch builder: sequence " + std::to_string(s) + " has no block for position " + std::to_string(pos));
      out.token_ids[static_cast<size_t>(t)] = seq.token_ids[i];
      out.positions[static_cast<size_t>(t)] = pos;
      out.slot_mapping[static_cast<size_t>(t)] = block * block_size_ + pos % block_size_;
    }
    out.query_start[s + 1] = t;
    out.seq_lens[s] = seq.start_pos + static_cast<int32_t>(seq.token_ids.size());
    std::copy(seq.block_table.begin(), seq.block_table.end(),
              out.block_tables.begin() + static_cast<std::ptrdiff_t>(s * static_cast<size_t>(max_blocks)));
    if (seq.all_logits) {
      for (int32_t i = out.query_start[s]; i < t; ++i) out.logits_indices.push_back(i);
    } else if (seq.need_logits) {
      out.logits_indices.push_back(t - 1);
    }
  }
}

}  // namespace loom
