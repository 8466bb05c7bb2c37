// Speculative decoding on the engine thread: asks the speculator plugin for drafts, puts them
// where the scheduler budgets them, and keeps the counters. The verification itself (which drafts
// the target accepts) is the engine's update (engine_speculation.cpp); this class owns the drafts
// between proposal and verification.
//
// Life of a draft within one step:
//   propose      before schedule: for each request in decode (all of its tokens but the last
//                computed), k drafts (chosen per request, see choose_k) are appended to its
//                token_ids, so the scheduler sees num_tokens - num_computed = k + 1 and budgets
//                them like any tokens (a chunk shorter than k + 1 verifies fewer)
//   fit_to_plan  after schedule: a request not scheduled (or preempted) loses its drafts; a
//                scheduled one keeps the drafts its chunk covers
//   mark_logits  after prepare: those sequences return logits at every scheduled position
//   take         in update: the drafts leave token_ids; the engine re-appends what it accepts
// Invariant outside a step: no request's token_ids holds a draft.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine_api.hpp"
#include "core/engine/proposal_cost_model.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/row_cost_table.hpp"
#include "core/engine/step_plan.hpp"
#include "core/engine/step_time_model.hpp"
#include "core/plugin/loaded_plugin.hpp"
#include "core/plugin/plugin_host.hpp"
#include "loom/speculator.h"

namespace loom {

// One request's drafts of this step.
struct Drafts {
  std::vector<int32_t> tokens;  // [n]
  std::vector<float> probs;     // [n, vocab] the draft's distributions, or empty (deterministic)
};

class Speculation {
 public:
  Speculation(std::unique_ptr<LoadedPlugin> plugin, const SpeculationConfig& config, int32_t vocab_size,
              int32_t max_model_len, const StepTimeModel& step_model);
  ~Speculation();

  // The most drafts k a request can take now: 0 when it is not decoding, opted out, or too near
  // its max_tokens / the context length for one draft plus the bonus token.
  int32_t room(const RequestState& req) const;
  // Before schedule: drafts appended to the token_ids of the requests in `running`.
  void propose(std::span<RequestState* const> running);
  // After schedule: drafts kept only as far as each request's scheduled chunk reaches.
  void fit_to_plan(const StepPlan& plan);
  // After prepare: every scheduled sequence with drafts returns all its rows.
  void mark_logits(StepPlan& plan) const;
  int32_t num_drafts(uint64_t request_id) const;
  // Removes req's drafts from its token_ids and returns them.
  Drafts take(RequestState& req);
  // The target accepted `accepted` of the `drafted` tokens of req's verification.
  void observe(uint64_t request_id, int32_t drafted, int32_t accepted);
  // A step with no prompt tokens (decodes and verifications) of `rows` rows took wall_us in the
  // target (the proposal excluded): what choose_k prices such steps from.
  void observe_step(int32_t rows, int64_t wall_us) { row_costs_.observe(rows, wall_us); }
  // The request ends: drafts stripped if any are still in its token_ids, the plugin told.
  void finish(RequestState& req);
  SpecDecodeStats stats() const;
  int32_t num_speculative_tokens() const { return k_; }

 private:
  struct Tracked {
    Drafts drafts;
    int64_t tried = 0;     // over the request's life, for its acceptance rate (see acceptance())
    int64_t accepted = 0;
    RequestState* holder = nullptr;  // while it has drafts (within one step)
    int32_t off_steps = 0;           // consecutive steps adaptation gave it no drafts
    int32_t probe_after = kProbeSteps;  // off steps before its next probe (doubles per failed probe)
    int32_t proposed_tokens = 0;        // its num_tokens at its last proposal (0: none yet)
  };
  // A request adaptation keeps off gets one probe draft after kProbeSteps off steps, then after
  // twice as many each time adaptation keeps it off again, up to kMaxProbeSteps: a probe of a
  // draft model costs the catch-up of every token since the last one.
  static constexpr int32_t kProbeSteps = 16;
  static constexpr int32_t kMaxProbeSteps = 512;
  // Tokens ahead over which a request's catch-up is spread (choose_k).
  static constexpr int32_t kCatchUpHorizon = 256;
  // Why a proposal's answer for one request cannot be used (a count past max_drafts, a token id
  // outside the vocabulary); empty when it can.
  std::string bad_drafts(const loom_spec_request& q) const;
  // Per request, k from the step-time model and its acceptance rate (see speculation.cpp).
  // probe[i] is set where k[i] = 1 is a probe, not adaptation's choice.
  // num_running: requests decoding this step; num_requests: every request, waiting and in prefill too.
  std::vector<int32_t> choose_k(std::span<RequestState* const> eligible, std::span<const int32_t> room,
                                int32_t num_running, int32_t num_requests, int64_t kv_tokens,
                                std::vector<bool>& probe) const;
  double global_acceptance() const;
  double acceptance(uint64_t request_id) const;
  void strip(RequestState& req, int32_t keep);

  std::unique_ptr<LoadedPlugin> plugin_;
  const loom_speculator_vtable* vtable_;
  int32_t k_;
  bool adaptive_;
  int32_t vocab_;
  int32_t max_model_len_;
  const StepTimeModel* step_model_;
  ProposalCostModel proposal_cost_;  // the speculator's proposals, timed (excluded from step_model_)
  RowCostTable row_costs_;           // prompt-free steps by row count, measured (see choose_k)
  std::unordered_map<uint64_t, Tracked> tracked_;
  SpecDecodeStats stats_;
  int64_t tried_ = 0;  // drafts the target judged, over every verification (see acceptance())
  // propose() scratch, reused across steps.
  std::vector<loom_spec_request> asks_;
  std::vector<int32_t> draft_ids_;   // [asks, k]
  std::vector<float> draft_probs_;   // [asks, k, vocab]
  std::vector<uint64_t> scheduled_;  // fit_to_plan scratch
};

// A [speculator] table's plugin, created for the model's vocabulary and context length and given
// the host's draft models (may be null); null without the table.
std::unique_ptr<LoadedPlugin> create_speculator(PluginHost& host, const Config& config, int32_t vocab_size,
                                                int32_t max_model_len, const loom_draft_model_api* draft_models);

}  // namespace loom
