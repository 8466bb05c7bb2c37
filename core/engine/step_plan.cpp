#include "core/engine/step_plan.hpp"

#include <algorithm>
#include <span>

namespace loom {

void prepare_batch(StepPlan& plan, const CacheHandle& cache, SwapCoordinator& swaps, PrefixTiers* tiers) {
  size_t kept = 0;
  for (PlannedSeq& s : plan.seqs) {
    RequestState& req = *s.request;
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
    plan.seqs[kept++] = s;
  }
  plan.seqs.resize(kept);
  // No cache call mutates anything from here to the batch build: the table views stay valid,
  // and the builder copies each of them once into the flat batch.
  plan.batch.clear();
  for (const PlannedSeq& s : plan.seqs) {
    const RequestState& req = *s.request;
    SeqSchedule seq;
    seq.token_ids = std::span<const int32_t>(req.token_ids)
                        .subspan(static_cast<size_t>(req.num_computed_tokens), static_cast<size_t>(s.num_new_tokens));
    seq.start_pos = req.num_computed_tokens;
    seq.block_table = cache.block_table(req.id);
    seq.need_logits = req.num_computed_tokens + s.num_new_tokens == req.num_tokens();
    // Prompt logprobs: the row at position p scores prompt token p + 1, so every chunk that
    // starts before the prompt's last position returns all its rows.
    seq.all_logits = req.sampling.prompt_logprobs.has_value() && req.num_computed_tokens + 1 < req.num_prompt_tokens;
    plan.batch.push_back(seq);
  }
}

}  // namespace loom
