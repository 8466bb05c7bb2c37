#include "core/executor/micro_batch.hpp"

#include <algorithm>
#include <string>

#include "core/common/error.hpp"

namespace loom {

void slice_batch(const BuiltBatch& in, int32_t t0, int32_t t1, BuiltBatch& out, std::vector<int32_t>& logit_rows) {
  if (t0 < 0 || t1 <= t0 || t1 > in.num_tokens())
    throw Error("slice_batch: token range [" + std::to_string(t0) + ", " + std::to_string(t1) + ") outside a batch of " +
                std::to_string(in.num_tokens()));
  auto take = [&](const std::vector<int32_t>& v, std::vector<int32_t>& dst) {
    dst.assign(v.begin() + t0, v.begin() + t1);
  };
  take(in.token_ids, out.token_ids);
  take(in.positions, out.positions);
  out.slot_mapping.clear();
  for (int32_t g = 0; g < in.num_groups; ++g) {  // [num_groups, num_tokens]: each group's slice
    const auto base = in.slot_mapping.begin() + static_cast<std::ptrdiff_t>(g) * in.num_tokens();
    out.slot_mapping.insert(out.slot_mapping.end(), base + t0, base + t1);
  }
  out.max_blocks_per_seq = in.max_blocks_per_seq;
  out.block_size = in.block_size;
  out.num_groups = in.num_groups;
  out.query_start.assign(1, 0);
  out.seq_lens.clear();
  out.block_tables.clear();
  const auto width = static_cast<size_t>(in.max_blocks_per_seq);
  std::vector<int32_t> kept;  // the sequences the slice touches (a few: no scratch needed)
  for (int32_t s = 0; s < in.num_seqs(); ++s) {
    const int32_t begin = std::max(in.query_start[static_cast<size_t>(s)], t0);
    const int32_t end = std::min(in.query_start[static_cast<size_t>(s) + 1], t1);
    if (begin >= end) continue;
    out.query_start.push_back(end - t0);
    // Context after this slice: everything up to and including its last token of the sequence.
    out.seq_lens.push_back(in.positions[static_cast<size_t>(end - 1)] + 1);
    kept.push_back(s);
  }
  for (int32_t g = 0; g < in.num_groups; ++g) {  // [num_groups, kept seqs, width]
    for (int32_t s : kept) {
      const size_t at = (static_cast<size_t>(g) * static_cast<size_t>(in.num_seqs()) + static_cast<size_t>(s)) * width;
      const auto row = in.block_tables.begin() + static_cast<std::ptrdiff_t>(at);
      out.block_tables.insert(out.block_tables.end(), row, row + static_cast<std::ptrdiff_t>(width));
    }
  }
  out.logits_indices.clear();
  out.logits_top_k.clear();
  logit_rows.clear();
  for (size_t i = 0; i < in.logits_indices.size(); ++i) {
    const int32_t t = in.logits_indices[i];
    if (t >= t0 && t < t1) {
      out.logits_indices.push_back(t - t0);
      out.logits_top_k.push_back(in.logits_top_k.empty() ? 0 : in.logits_top_k[i]);
      logit_rows.push_back(static_cast<int32_t>(i));
    }
  }
}

}  // namespace loom
