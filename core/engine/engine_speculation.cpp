// The engine's side of speculative decoding: the hooks step() calls (core/engine/speculation.hpp
// owns the drafts). Verification is sample_into() row by row, so logits processors, the grammar,
// logprobs, stop conditions and streaming behave exactly as without speculation: row j scores
// the position after the last token plus the first j drafts, and is processed against exactly the
// tokens accepted so far.
//
// Region map of one verified sequence's rows (n drafts, n + 1 rows):
//   row 0        after the last accepted token: checks draft 0
//   row j        after draft j - 1: checks draft j (read only if drafts 0..j-1 were accepted)
//   row n        after the last draft: the bonus token when every draft was accepted
#include <algorithm>

#include "core/common/error.hpp"
#include "core/engine/engine.hpp"
#include "core/engine/speculative_sampling.hpp"

namespace loom {

void Engine::propose_drafts() {
  std::vector<RequestState*> running;
  running.reserve(requests_.size());
  for (auto& [id, req] : requests_) running.push_back(req.get());
  // In id order, so a speculator sees the same batch whatever the map's order.
  std::sort(running.begin(), running.end(), [](const RequestState* a, const RequestState* b) { return a->id < b->id; });
  speculation_->propose(running);
}

int32_t Engine::verify_sampled(std::span<const float> allowed, RequestState& req, const DraftToVerify& draft) {
  stack_->distribution(allowed, req.sampling, target_probs_);
  return verify_draft(target_probs_, draft.probs, draft.token, req.rng).token;
}

size_t Engine::verify_drafts(RequestState& req, std::span<const float> rows, const SelectedRows& selected,
                             int32_t num_rows, int64_t sampled_us) {
  const auto vocab = static_cast<size_t>(info_.vocab_size);
  const uint64_t id = req.id;
  const Drafts drafts = speculation_->take(req);
  const auto n = static_cast<int32_t>(drafts.tokens.size());
  LOOM_CHECK(num_rows == n + 1, "internal: request " + std::to_string(id) + " verifies " + std::to_string(n) +
                                    " drafts from " + std::to_string(num_rows) + " rows");
  // The last accepted token's K/V is written now; each accepted draft's too, at its position.
  req.num_computed_tokens += 1;
  int32_t accepted = 0;
  bool alive = true;
  req.coalesce_outputs = true;  // one streamed chunk for every token this step accepts
  for (int32_t j = 0; j <= n; ++j) {
    const std::span<const float> row = rows.subspan(static_cast<size_t>(j) * vocab, vocab);
    const size_t before = req.token_ids.size();
    if (!selected.empty()) {  // a greedy request: each row's best entry verifies (head_selection.hpp)
      sample_selected(req, selected.ids_of(static_cast<size_t>(j)), selected.values_of(static_cast<size_t>(j)),
                      sampled_us);
    } else if (j < n) {
      DraftToVerify draft{drafts.tokens[static_cast<size_t>(j)], {}};
      if (!drafts.probs.empty()) draft.probs = std::span<const float>(drafts.probs).subspan(static_cast<size_t>(j) * vocab, vocab);
      sample_into(req, row, sampled_us, &draft);
    } else {
      sample_into(req, row, sampled_us);
    }
    if (requests_.find(id) == requests_.end()) {  // finished (stop, length, error): req is gone
      alive = false;
      break;
    }
    const bool match = j < n && req.token_ids.size() > before && req.token_ids[before] == drafts.tokens[static_cast<size_t>(j)];
    const bool forced = req.token_ids.size() > before + 1;  // the grammar appended tokens no row scored
    if (match) {
      ++accepted;
      ++req.num_computed_tokens;
    }
    if (!match || forced) break;
  }
  speculation_->observe(id, n, accepted);
  if (alive) {
    flush_output(req);
    // Roll back: the rejected drafts' K/V sits past num_computed_tokens; their blocks go back.
    stack_->cache_trim(req.view(), req.num_computed_tokens);
    stack_->cache_commit(req.view());
  }
  return static_cast<size_t>(num_rows);
}

}  // namespace loom
