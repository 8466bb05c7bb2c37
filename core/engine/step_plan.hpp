// The plan of one engine step: what the scheduler decided, as the host carried it out, and what
// the batch builder packs. One type from schedule to batch build:
//
//   schedule  -> seqs (request, cached prefix, chunk), preempted (already carried out), rejected
//   prepare   -> cached prefixes applied, swapped tokens restored, chunks restored whole dropped,
//                batch[i] bound to seqs[i] with a view of the cache's block table (no copy);
//                a request whose preparation failed leaves the plan for `failed`
//   execute   -> the batch builder copies each block table once, into the flat batch
//
// Invariant after prepare: batch.size() == seqs.size() and batch[i] describes seqs[i]'s chunk.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/engine/plugin_handles.hpp"
#include "core/engine/prefix_tiers.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/swap_coordinator.hpp"
#include "core/executor/batch_builder.hpp"
#include "loom/scheduler.h"

namespace loom {

struct PlannedSeq {
  RequestState* request = nullptr;
  int32_t num_cached_tokens = 0;  // prefix hit reported at allocation; prepare adds it to computed
  int32_t num_new_tokens = 0;     // the chunk; after prepare, only the tokens the model computes
};

struct Preemption {
  uint64_t request_id = 0;
  loom_preempt_mode mode = LOOM_PREEMPT_RECOMPUTE;
  int32_t swapped_tokens = 0;  // tokens the tier kept (restored instead of recomputed)
};

struct StepPlan {
  std::vector<PlannedSeq> seqs;          // [num scheduled], scheduler order
  std::vector<Preemption> preempted;     // in the order they were carried out
  std::vector<std::pair<uint64_t, std::string>> rejected;  // id, reason
  std::vector<std::pair<uint64_t, std::string>> failed;    // id, error: prepare could not ready it
  std::vector<SeqSchedule> batch;        // [seqs.size()] after prepare
  // [seqs.size(), num_groups] views of each sequence's group tables (block-table groups only;
  // batch[i].group_tables points into it).
  std::vector<std::span<const int32_t>> group_tables;
  int64_t num_scheduled_tokens = 0;      // the scheduler's chunks summed (restored tokens included)

  void clear() {
    seqs.clear();
    preempted.clear();
    rejected.clear();
    failed.clear();
    batch.clear();
    group_tables.clear();
    num_scheduled_tokens = 0;
  }
};

// Readies a scheduled plan for the forward pass: each sequence's cached prefix counts as
// computed, what the tier kept of its chunk is restored (a chunk restored whole is committed and
// leaves the plan), and batch[i] is bound to seqs[i] over the cache's live block table.
// tiers (may be null) restores staged prefix blocks past the cache's hit, after any swap-in.
// A request whose preparation throws, or whose block table does not hold its chunk in ids of the
// pool's num_blocks, leaves the plan for plan.failed (the engine ends it); the others go on.
void prepare_batch(StepPlan& plan, const CacheHandle& cache, SwapCoordinator& swaps, PrefixTiers* tiers = nullptr);

}  // namespace loom
