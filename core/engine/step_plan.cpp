#include "core/engine/step_plan.hpp"

#include <algorithm>
#include <exception>
#include <span>

#include "core/common/error.hpp"

namespace loom {
namespace {

// The cache's table for a chunk of n tokens from start_pos must hold it in ids of the pool: a bad
// id would have the forward pass write K/V outside the pool (or into another request's blocks).
// Entries wholly before the chunk may be -1 (released by a windowed group, cache 1.5).
void check_table(std::span<const int32_t> table, int32_t start_pos, int32_t n, int32_t block_size, int32_t num_blocks,
                 uint64_t id) {
  const int64_t needed = (static_cast<int64_t>(start_pos) + n + block_size - 1) / block_size;
  LOOM_CHECK(static_cast<int64_t>(table.size()) >= needed,
             "cache: request " + std::to_string(id) + "'s block table holds " + std::to_string(table.size()) +
                 " blocks, fewer than the " + std::to_string(needed) + " its tokens need");
  const int64_t first_written = start_pos / block_size;
  for (size_t b = 0; b < table.size(); ++b) {
    const int32_t block = table[b];
    const bool released = block == -1 && static_cast<int64_t>(b) < first_written;
    LOOM_CHECK(released || (block >= 0 && block < num_blocks),
               "cache: request " + std::to_string(id) + "'s block table names block " + std::to_string(block) +
                   ", outside the pool [0, " + std::to_string(num_blocks) + ")");
  }
}

}  // namespace

void prepare_batch(StepPlan& plan, const CacheHandle& cache, SwapCoordinator& swaps, PrefixTiers* tiers) {
  size_t kept = 0;
  for (PlannedSeq& s : plan.seqs) {
    RequestState& req = *s.request;
    try {
      req.num_computed_tokens += s.num_cached_tokens;
      int32_t restored = swaps.restore(req, s.num_new_tokens);
      req.num_computed_tokens += restored;
      if (tiers != nullptr) {
        // It may restore past the chunk (the table grown to hold it): the chunk's tokens then
        // come after the restored ones, short of the request's last token at most.
        const int32_t from_tier = tiers->restore(req, s.num_new_tokens - restored);
        req.num_computed_tokens += from_tier;
        if (from_tier > s.num_new_tokens - restored)
          s.num_new_tokens = restored + from_tier +
                             std::min(s.num_new_tokens - restored, req.num_tokens() - req.num_computed_tokens);
        restored += from_tier;
      }
      if (restored > 0 && restored == s.num_new_tokens) {  // the whole chunk came from the tier
        cache.commit(req.view());
        continue;
      }
      s.num_new_tokens -= restored;
    } catch (const std::exception& e) {
      plan.failed.emplace_back(req.id, e.what());
      continue;
    }
    plan.seqs[kept++] = s;
  }
  plan.seqs.resize(kept);
  // No cache call mutates anything from here to the batch build: the table views stay valid,
  // and the builder copies each of them once into the flat batch.
  plan.batch.clear();
  const auto groups = static_cast<size_t>(cache.num_groups());
  plan.group_tables.clear();
  if (groups > 1) plan.group_tables.reserve(plan.seqs.size() * groups);  // no reallocation: views point in
  kept = 0;
  for (const PlannedSeq& s : plan.seqs) {
    const RequestState& req = *s.request;
    SeqSchedule seq;
    try {
      if (groups > 1) {  // group 0's table is block_table's
        const size_t first = plan.group_tables.size();
        for (size_t g = 0; g < groups; ++g) {
          const std::span<const int32_t> table = cache.group_block_table(req.id, static_cast<int32_t>(g));
          check_table(table, req.num_computed_tokens, s.num_new_tokens, cache.block_size(), cache.num_blocks(), req.id);
          plan.group_tables.push_back(table);
        }
        seq.group_tables = std::span<const std::span<const int32_t>>(plan.group_tables).subspan(first, groups);
        seq.block_table = seq.group_tables[0];
      } else {
        seq.block_table = cache.block_table(req.id);
        check_table(seq.block_table, req.num_computed_tokens, s.num_new_tokens, cache.block_size(),
                    cache.num_blocks(), req.id);
      }
    } catch (const std::exception& e) {
      plan.failed.emplace_back(req.id, e.what());
      continue;
    }
    seq.token_ids = std::span<const int32_t>(req.token_ids)
                        .subspan(static_cast<size_t>(req.num_computed_tokens), static_cast<size_t>(s.num_new_tokens));
    seq.start_pos = req.num_computed_tokens;
    seq.need_logits = req.num_computed_tokens + s.num_new_tokens == req.num_tokens();
    // Prompt logprobs: the row at position p scores prompt token p + 1, so every chunk that
    // starts before the prompt's last position returns all its rows.
    seq.all_logits = req.sampling.prompt_logprobs.has_value() && req.num_computed_tokens + 1 < req.num_prompt_tokens;
    plan.batch.push_back(seq);
    plan.seqs[kept++] = s;
  }
  plan.seqs.resize(kept);
}

}  // namespace loom
