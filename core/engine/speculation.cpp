#include "core/engine/speculation.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/engine/catch_up_payback.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom {

std::unique_ptr<LoadedPlugin> create_speculator(PluginHost& host, const Config& config, int32_t vocab_size,
                                                int32_t max_model_len, const loom_draft_model_api* draft_models) {
  if (!config.speculator) return nullptr;
  PluginSpec spec;
  spec.kind = LOOM_KIND_SPECULATOR;
  spec.name = config.speculator->plugin;
  spec.path = config.speculator->path;
  spec.config_json = config.speculator->config_json;
  loom_speculator_create_args args{};
  args.struct_size = sizeof(args);
  args.vocab_size = vocab_size;
  args.max_model_len = max_model_len;
  args.num_speculative_tokens = config.speculation.num_speculative_tokens;
  args.draft_models = draft_models;
  return host.create(spec, &args);
}

Speculation::Speculation(std::unique_ptr<LoadedPlugin> plugin, const SpeculationConfig& config, int32_t vocab_size,
                         int32_t max_model_len, const StepTimeModel& step_model)
    : plugin_(std::move(plugin)),
      vtable_(&plugin_->vtable<loom_speculator_vtable>()),
      k_(config.num_speculative_tokens),
      adaptive_(config.adaptive),
      vocab_(vocab_size),
      max_model_len_(max_model_len),
      step_model_(&step_model) {
  stats_.enabled = true;
  stats_.accepted_per_pos.assign(static_cast<size_t>(k_), 0);
  LOOM_LOG_INFO("speculative decoding: speculator {} proposes up to {} tokens per request and step{}", plugin_->name(),
                k_, adaptive_ ? ", adapted per request from the step-time model and acceptance" : "");
}

Speculation::~Speculation() = default;

SpecDecodeStats Speculation::stats() const {
  SpecDecodeStats s = stats_;
  s.proposal_per_step_us = proposal_cost_.coefficients().per_step_us;
  s.proposal_per_request_draft_us = proposal_cost_.coefficients().per_request_draft_us;
  s.proposal_per_catch_up_token_us = proposal_cost_.coefficients().per_catch_up_token_us;
  return s;
}

int32_t Speculation::room(const RequestState& req) const {
  if (!req.sampling.speculative_decoding || req.num_unforked > 0) return 0;
  // Decoding: every token but the last is computed, and the prompt is done.
  if (req.num_computed_tokens != req.num_tokens() - 1 || req.num_generated() < 1) return 0;
  // Accepting every draft adds drafts + 1 tokens; both limits must hold after that.
  const int32_t by_max_tokens = req.sampling.max_tokens - req.num_generated() - 1;
  const int32_t by_context = std::min(max_model_len_, req.max_total_tokens) - req.num_tokens() - 1;
  return std::max(0, std::min({k_, by_max_tokens, by_context}));
}

// The rates adaptation uses are the chance that a draft is accepted once the drafts before it
// were: accepted over tried, where a verification tries its accepted drafts and its first rejected
// one (the drafts after it are never judged). Accepted over drafted, the rate /metrics reports,
// underestimates it under the geometric model E(k) assumes (0.96 per draft shows as 0.905 over 4
// drafts), which chose a k too small at batch 1. Laplace: one accepted and one rejected
// pseudo-draft, so one early rejection cannot pin a rate at 0.
double Speculation::global_acceptance() const {
  return (static_cast<double>(stats_.num_accepted_tokens) + 1.0) / (static_cast<double>(tried_) + 2.0);
}

double Speculation::acceptance(uint64_t request_id) const {
  // The global rate is the prior of each request's own (two pseudo-drafts).
  const double global = global_acceptance();
  const auto it = tracked_.find(request_id);
  if (it == tracked_.end()) return global;
  return (static_cast<double>(it->second.accepted) + 2.0 * global) / (static_cast<double>(it->second.tried) + 2.0);
}

// Adaptive k. A request with acceptance rate a and k drafts yields E(k) = 1 + a + ... + a^k
// tokens in expectation (each draft accepted only if the ones before it were, plus the bonus
// token) for k more positions in the step. The target's pass is priced from measured steps by
// row count (row_cost_table.hpp: a decode step's cost bends where its rows turn the GEMMs
// compute-bound, which the linear step-time model misses), or by the step-time model before the
// first such step (a sequence of k + 1 tokens timed as prefill tokens, a single decode token as
// decode), and the proposal cost model the drafting itself (a draft model's k forward passes:
// without it, drafts that cost more to make than the target saves were chosen at every batch
// size). Requests go by acceptance rate, best first, each taking the k that maximises the step's
// expected tokens per microsecond given the choices before it; k = 0 whenever no k raises it.
// With a large batch the base cost is shared by many tokens, extra positions cost more than they
// return, and every k falls to 0: speculation switches itself off. Before the models have
// samples, one request gets the configured k.
std::vector<int32_t> Speculation::choose_k(std::span<RequestState* const> eligible, std::span<const int32_t> room,
                                           int32_t num_running, int32_t num_requests, int64_t kv_tokens,
                                           std::vector<bool>& probe) const {
  std::vector<int32_t> k(room.begin(), room.end());
  probe.assign(eligible.size(), false);
  const StepCoefficients c = step_model_->coefficients();
  if (!adaptive_) return k;
  // Until both models have samples nothing can be priced: the oldest request drafts (its first
  // proposal measures a catch-up, the next ones the drafting), the others wait. Drafting for every
  // request of a large batch at once cost seconds with a draft model, their prompts to catch up on.
  if (c.samples < 8 || proposal_cost_.coefficients().steady_samples == 0) {
    for (size_t i = 1; i < k.size(); ++i) k[i] = 0;
    return k;
  }
  // Drafting is weighed against what this batch costs without drafts: until a step of that many
  // rows with no prompt tokens has been measured, this step measures it (no drafts at all).
  if (num_running >= 1 && !row_costs_.measured(num_running)) {
    std::fill(k.begin(), k.end(), 0);
    return k;
  }
  std::vector<size_t> order(eligible.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<double> rate(eligible.size());
  for (size_t i = 0; i < eligible.size(); ++i) rate[i] = acceptance(eligible[i]->id);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rate[a] > rate[b]; });
  const double global_rate = global_acceptance();
  int32_t prefill = 0, decode = num_running;
  double tokens = num_running;
  // The step's time: the target's pass plus the proposal of the drafts chosen so far.
  int32_t max_drafts = 0;
  int64_t sum_drafts = 0;
  double catching_up = 0.0;  // the chosen requests' shares of their catch-up
  // The target's pass over p verification rows and d decodes: from the measured steps
  // (row_cost_table.hpp), or the linear model before there are any.
  auto target_us = [&](int32_t p, int32_t d, int64_t kv) {
    if (const auto t = row_costs_.predict_us(p + d, c.per_prefill_token_us)) return *t;
    return static_cast<double>(predict_step_us(c, p, d, kv));
  };
  auto time_of = [&](int32_t p, int32_t d, int64_t kv, int32_t kmax, int64_t ksum) {
    return target_us(p, d, kv) + proposal_cost_.predict_us(kmax, ksum) + catching_up;
  };
  double time = time_of(prefill, decode, kv_tokens, 0, 0);
  // At most one probe a step: each costs a catch-up (a draft model's pass over every token the
  // request gained since it last drafted), and requests kept off together come due together.
  bool probed = false;
  for (size_t i : order) {
    // Drafting for a request first costs catching up on the tokens it gained since its last
    // proposal (its whole context at the first): an investment that pays over the rest of the
    // request, so this step is charged the share of it the step's expected tokens are of what
    // the request may still generate (at most kCatchUpHorizon tokens ahead).
    const RequestState& req = *eligible[i];
    const auto t_it = tracked_.find(req.id);
    const int32_t proposed = t_it == tracked_.end() ? 0 : t_it->second.proposed_tokens;
    const double catch_up = proposal_cost_.catch_up_us(req.num_tokens() - proposed);
    const double horizon =
        std::clamp<double>(req.sampling.max_tokens - req.num_generated(), 1.0, static_cast<double>(kCatchUpHorizon));
    // The k that maximises the step's expected tokens per microsecond at acceptance rate r,
    // charged its share of the catch-up.
    struct Choice {
      int32_t k = 0;
      double time = 0.0, share = 0.0;
    };
    auto best_for = [&](double r) {
      Choice best_choice{0, time, 0.0};
      double best = time > 0 ? tokens / time : 0.0;
      double gain = 0.0, a_pow = 1.0;
      for (int32_t kk = 1; kk <= room[i]; ++kk) {
        a_pow *= r;
        gain += a_pow;  // E(kk) - 1
        const double share = catch_up * std::min(1.0, (1.0 + gain) / horizon);
        const double t =
            time_of(prefill + kk + 1, decode - 1, kv_tokens + kk, std::max(max_drafts, kk), sum_drafts + kk) + share;
        const double rate_here = t > 0 ? (tokens + gain) / t : 0.0;
        if (rate_here > best) best = rate_here, best_choice = Choice{kk, t, share};
      }
      return best_choice;
    };
    // Whether speculating for this request pays in a step of `batch` decodes, at rate r, and
    // repays `invest` microseconds of catch-up before the request ends (catch_up_payback.hpp). A
    // probe of a request with 9 tokens left and 400 behind on a draft model cost 0.4 s.
    auto pays_at = [&](int32_t batch, double r, double invest) {
      const double t0 = target_us(0, batch, kv_tokens);
      double gain = 0.0, a_pow = 1.0;
      for (int32_t kk = 1; kk <= room[i]; ++kk) {
        a_pow *= r;
        gain += a_pow;
        const double t = target_us(kk + 1, batch - 1, kv_tokens + kk) + proposal_cost_.predict_us(kk, kk);
        if (repays_catch_up(batch, t0, t, gain, horizon, invest)) return true;
      }
      return false;
    };
    // A request more than a round behind (its first proposal, or back from steps off) is worth
    // catching up only if speculating pays once the batch holds every request the engine has
    // (those still in prefill or waiting decode soon) and repays the catch-up before the request
    // ends: otherwise the catch-up buys a few steps of drafts before the growing batch turns
    // speculation off again, or before the request stops.
    const bool behind = req.num_tokens() - proposed > k_ + 1;
    Choice chosen = behind && !pays_at(num_requests, rate[i], catch_up) ? Choice{0, time, 0.0} : best_for(rate[i]);
    // A request adaptation keeps off still gets a probe draft now and then (see kProbeSteps), so
    // its rate is measured again (a low early estimate never switches speculation off for good).
    // Only where speculating could pay: at the acceptance every request starts from, in a batch
    // of every request, repaying the probe's catch-up in what the request has left. Otherwise (a
    // large batch, a request near its end) a probe would buy a measurement nothing can use, at
    // the price of catching up on every token since the last.
    if (chosen.k == 0 && !probed && t_it != tracked_.end() && t_it->second.off_steps + 1 >= t_it->second.probe_after &&
        pays_at(num_requests, std::max(rate[i], global_rate), catch_up)) {
      const double share = catch_up * std::min(1.0, (1.0 + rate[i]) / horizon);
      chosen = Choice{1, time_of(prefill + 2, decode - 1, kv_tokens + 1, std::max(max_drafts, 1), sum_drafts + 1) + share,
                      share};
      probe[i] = true;
      probed = true;
    }
    const int32_t best_k = chosen.k;
    const double best_time = chosen.time, best_share = chosen.share;
    k[i] = best_k;
    if (best_k > 0) {
      double e = 0.0, p = 1.0;
      for (int32_t j = 1; j <= best_k; ++j) e += (p *= rate[i]);
      tokens += e;
      prefill += best_k + 1;
      decode -= 1;
      kv_tokens += best_k;
      max_drafts = std::max(max_drafts, best_k);
      sum_drafts += best_k;
      catching_up += best_share;
      time = best_time;
    }
  }
  return k;
}

void Speculation::propose(std::span<RequestState* const> running) {
  std::vector<RequestState*> eligible;
  std::vector<int32_t> room_of;
  int64_t kv_tokens = 0;
  int32_t decoding = 0;
  for (RequestState* req : running) {
    kv_tokens += req->num_tokens();
    if (req->num_computed_tokens == req->num_tokens() - 1) ++decoding;
    if (const int32_t r = room(*req); r > 0) {
      eligible.push_back(req);
      room_of.push_back(r);
    }
  }
  if (eligible.empty()) return;
  ++stats_.num_steps;
  std::vector<bool> probe;
  const std::vector<int32_t> k =
      choose_k(eligible, room_of, decoding, static_cast<int32_t>(running.size()), kv_tokens, probe);
  asks_.clear();
  draft_ids_.assign(eligible.size() * static_cast<size_t>(k_), 0);
  draft_probs_.resize(eligible.size() * static_cast<size_t>(k_) * static_cast<size_t>(vocab_));
  std::vector<RequestState*> asked;
  for (size_t i = 0; i < eligible.size(); ++i) {
    if (k[i] <= 0) continue;
    const RequestState& req = *eligible[i];
    loom_spec_request q{};
    q.struct_size = sizeof(q);
    q.request_id = req.id;
    q.token_ids = req.token_ids.data();
    q.num_tokens = req.num_tokens();
    q.num_prompt_tokens = req.num_prompt_tokens;
    q.max_drafts = k[i];
    q.draft_ids = draft_ids_.data() + asks_.size() * static_cast<size_t>(k_);
    q.draft_probs = draft_probs_.data() + asks_.size() * static_cast<size_t>(k_) * static_cast<size_t>(vocab_);
    asks_.push_back(q);
    asked.push_back(eligible[i]);
  }
  // A proposal is a sample of the drafting cost only in steady state: every asked request's
  // speculator has at most one round's tokens to catch up on (the accepted drafts and the bonus
  // token). A first proposal (the whole prompt) or a probe after steps off costs the catch-up of
  // every token since, a cost that follows from having been off, not from drafting now.
  ProposalSample cost;
  bool steady = true;
  for (size_t i = 0; i < eligible.size(); ++i) {
    Tracked& t = tracked_[eligible[i]->id];
    t.off_steps = k[i] > 0 ? 0 : t.off_steps + 1;
    if (probe[i]) t.probe_after = std::min(2 * t.probe_after, kMaxProbeSteps);
    else if (k[i] > 0) t.probe_after = kProbeSteps;
    if (k[i] <= 0) continue;
    const int32_t behind = eligible[i]->num_tokens() - t.proposed_tokens;
    steady = steady && t.proposed_tokens > 0 && behind <= k_ + 1;
    t.proposed_tokens = eligible[i]->num_tokens();
    cost.max_drafts = std::max(cost.max_drafts, k[i]);
    cost.sum_drafts += k[i];
    cost.catch_up += behind;
  }
  cost.steady = steady;
  if (asks_.empty()) {
    ++stats_.num_steps_adaptive_off;
    return;
  }
  // Drafts only save work: a failed proposal, or a bad one for a request, costs this step's
  // speculation (the requests decode one token as without a speculator) and fails nobody.
  std::string message;
  const auto started = std::chrono::steady_clock::now();
  const loom_status status =
      plugin_->try_call(&message, &loom_speculator_vtable::propose, asks_.data(), static_cast<int32_t>(asks_.size()));
  cost.wall_us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started).count();
  if (status == LOOM_OK) proposal_cost_.observe(cost);
  if (status != LOOM_OK) {
    LOOM_LOG_WARN("speculator '{}': propose failed, no drafts this step: {}", plugin_->name(), message);
    return;
  }
  for (size_t i = 0; i < asks_.size(); ++i) {
    const loom_spec_request& q = asks_[i];
    RequestState& req = *asked[i];
    if (q.num_drafts == 0) continue;
    if (const std::string bad = bad_drafts(q); !bad.empty()) {
      LOOM_LOG_WARN("speculator '{}': request {}: {}; its drafts are dropped", plugin_->name(), req.id, bad);
      continue;
    }
    Tracked& t = tracked_[req.id];
    t.holder = &req;
    t.drafts.tokens.assign(q.draft_ids, q.draft_ids + q.num_drafts);
    t.drafts.probs.clear();
    if (q.has_probs) t.drafts.probs.assign(q.draft_probs, q.draft_probs + static_cast<size_t>(q.num_drafts) * vocab_);
    req.token_ids.insert(req.token_ids.end(), t.drafts.tokens.begin(), t.drafts.tokens.end());
  }
}

std::string Speculation::bad_drafts(const loom_spec_request& q) const {
  if (q.num_drafts < 0 || q.num_drafts > q.max_drafts)
    return "proposed " + std::to_string(q.num_drafts) + " drafts, outside [0, " + std::to_string(q.max_drafts) + "]";
  for (int32_t i = 0; i < q.num_drafts; ++i) {
    if (q.draft_ids[i] < 0 || q.draft_ids[i] >= vocab_)
      return "proposed token id " + std::to_string(q.draft_ids[i]) + ", outside the vocabulary [0, " +
             std::to_string(vocab_) + ")";
  }
  return {};
}

void Speculation::strip(RequestState& req, int32_t keep) {
  auto it = tracked_.find(req.id);
  if (it == tracked_.end()) return;
  Drafts& d = it->second.drafts;
  const auto n = static_cast<int32_t>(d.tokens.size());
  if (keep >= n) return;
  req.token_ids.resize(req.token_ids.size() - static_cast<size_t>(n - keep));
  d.tokens.resize(static_cast<size_t>(keep));
  if (!d.probs.empty()) d.probs.resize(static_cast<size_t>(keep) * static_cast<size_t>(vocab_));
}

void Speculation::fit_to_plan(const StepPlan& plan) {
  for (const PlannedSeq& s : plan.seqs) {
    // The chunk covers the last token and then as many drafts as it reaches.
    strip(*s.request, std::max(0, s.num_cached_tokens + s.num_new_tokens - 1));
    scheduled_.push_back(s.request->id);
  }
  // Requests with drafts that were not scheduled (left waiting, or preempted) lose them all.
  for (auto& [id, t] : tracked_) {
    if (t.drafts.tokens.empty() || std::find(scheduled_.begin(), scheduled_.end(), id) != scheduled_.end()) continue;
    strip(*t.holder, 0);
  }
  scheduled_.clear();
}

void Speculation::mark_logits(StepPlan& plan) const {
  for (size_t i = 0; i < plan.seqs.size(); ++i)
    if (num_drafts(plan.seqs[i].request->id) > 0) plan.batch[i].all_logits = true;
}

int32_t Speculation::num_drafts(uint64_t request_id) const {
  const auto it = tracked_.find(request_id);
  return it == tracked_.end() ? 0 : static_cast<int32_t>(it->second.drafts.tokens.size());
}

Drafts Speculation::take(RequestState& req) {
  Drafts out;
  auto it = tracked_.find(req.id);
  if (it == tracked_.end()) return out;
  const auto n = it->second.drafts.tokens.size();
  req.token_ids.resize(req.token_ids.size() - n);
  out = std::move(it->second.drafts);
  it->second.drafts = Drafts{};
  return out;
}

void Speculation::observe(uint64_t request_id, int32_t drafted, int32_t accepted) {
  const int32_t tried = accepted + (accepted < drafted ? 1 : 0);
  if (auto it = tracked_.find(request_id); it != tracked_.end()) {  // gone when the request finished
    it->second.tried += tried;
    it->second.accepted += accepted;
  }
  tried_ += tried;
  ++stats_.num_drafts;
  stats_.num_draft_tokens += drafted;
  stats_.num_accepted_tokens += accepted;
  for (int32_t i = 0; i < accepted && i < k_; ++i) ++stats_.accepted_per_pos[static_cast<size_t>(i)];
  if (vtable_->observe != nullptr && tracked_.count(request_id) != 0) {
    std::string message;
    if (plugin_->try_call(&message, &loom_speculator_vtable::observe, request_id, drafted, accepted) != LOOM_OK)
      LOOM_LOG_WARN("speculator '{}': observe failed for request {}: {}", plugin_->name(), request_id, message);
  }
}

void Speculation::finish(RequestState& req) {
  if (auto it = tracked_.find(req.id); it != tracked_.end()) {
    strip(req, 0);
    tracked_.erase(it);
  }
  if (vtable_->finish != nullptr) {
    // The request ends all the same: the speculator only loses what it would have kept of it.
    std::string message;
    if (plugin_->try_call(&message, &loom_speculator_vtable::finish, req.id, req.token_ids.data(), req.num_tokens(),
                          req.num_prompt_tokens) != LOOM_OK)
      LOOM_LOG_WARN("speculator '{}': finish failed for request {}: {}", plugin_->name(), req.id, message);
  }
}

}  // namespace loom
