#include "core/engine/speculation.hpp"

#include <algorithm>
#include <cmath>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
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

int32_t Speculation::room(const RequestState& req) const {
  if (!req.sampling.speculative_decoding || req.num_unforked > 0) return 0;
  // Decoding: every token but the last is computed, and the prompt is done.
  if (req.num_computed_tokens != req.num_tokens() - 1 || req.num_generated() < 1) return 0;
  // Accepting every draft adds drafts + 1 tokens; both limits must hold after that.
  const int32_t by_max_tokens = req.sampling.max_tokens - req.num_generated() - 1;
  const int32_t by_context = std::min(max_model_len_, req.max_total_tokens) - req.num_tokens() - 1;
  return std::max(0, std::min({k_, by_max_tokens, by_context}));
}

double Speculation::acceptance(uint64_t request_id) const {
  // The running rate over every verification (Laplace: one accepted and one rejected
  // pseudo-draft, so one early rejection cannot pin it at 0), as the prior of each request's own
  // (two pseudo-drafts).
  const double global = (static_cast<double>(stats_.num_accepted_tokens) + 1.0) /
                        (static_cast<double>(stats_.num_draft_tokens) + 2.0);
  const auto it = tracked_.find(request_id);
  if (it == tracked_.end()) return global;
  return (static_cast<double>(it->second.accepted) + 2.0 * global) / (static_cast<double>(it->second.drafted) + 2.0);
}

// Adaptive k. A request with acceptance rate a and k drafts yields E(k) = 1 + a + ... + a^k
// tokens in expectation (each draft accepted only if the ones before it were, plus the bonus
// token) for k more positions in the step. The step-time model prices those positions
// (a sequence of k + 1 tokens is timed as prefill tokens, a single decode token as decode). Requests go
// by acceptance rate, best first, each taking the k that maximises the step's expected tokens per
// microsecond given the choices before it; k = 0 whenever no k raises it. With a large batch the
// base cost is shared by many tokens, extra positions cost more than they return, and every k
// falls to 0: speculation switches itself off. Before the model has samples, k is the
// configured one.
std::vector<int32_t> Speculation::choose_k(std::span<RequestState* const> eligible, std::span<const int32_t> room,
                                           int32_t num_running, int64_t kv_tokens) const {
  std::vector<int32_t> k(room.begin(), room.end());
  const StepCoefficients c = step_model_->coefficients();
  if (!adaptive_ || c.samples < 8) return k;
  std::vector<size_t> order(eligible.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::vector<double> rate(eligible.size());
  for (size_t i = 0; i < eligible.size(); ++i) rate[i] = acceptance(eligible[i]->id);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return rate[a] > rate[b]; });
  int32_t prefill = 0, decode = num_running;
  double tokens = num_running;
  auto time_of = [&](int32_t p, int32_t d, int64_t kv) { return static_cast<double>(predict_step_us(c, p, d, kv)); };
  double time = time_of(prefill, decode, kv_tokens);
  for (size_t i : order) {
    int32_t best_k = 0;
    double best = time > 0 ? tokens / time : 0.0;
    double best_time = time;
    double gain = 0.0, a_pow = 1.0;
    for (int32_t kk = 1; kk <= room[i]; ++kk) {
      a_pow *= rate[i];
      gain += a_pow;  // E(kk) - 1
      const double t = time_of(prefill + kk + 1, decode - 1, kv_tokens + kk);
      const double rate_here = t > 0 ? (tokens + gain) / t : 0.0;
      if (rate_here > best) best = rate_here, best_k = kk, best_time = t;
    }
    // A request adaptation keeps off still gets one draft every kProbeSteps steps, so its rate is
    // measured again (a low early estimate never switches speculation off for good).
    if (best_k == 0) {
      const auto t = tracked_.find(eligible[i]->id);
      if (t != tracked_.end() && t->second.off_steps + 1 >= kProbeSteps) best_k = 1, best_time = time_of(prefill + 2, decode - 1, kv_tokens + 1);
    }
    k[i] = best_k;
    if (best_k > 0) {
      double e = 0.0, p = 1.0;
      for (int32_t j = 1; j <= best_k; ++j) e += (p *= rate[i]);
      tokens += e;
      prefill += best_k + 1;
      decode -= 1;
      kv_tokens += best_k;
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
  const std::vector<int32_t> k = choose_k(eligible, room_of, decoding, kv_tokens);
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
  for (size_t i = 0; i < eligible.size(); ++i) {
    Tracked& t = tracked_[eligible[i]->id];
    t.off_steps = k[i] > 0 ? 0 : t.off_steps + 1;
  }
  if (asks_.empty()) {
    ++stats_.num_steps_adaptive_off;
    return;
  }
  // Drafts only save work: a failed proposal, or a bad one for a request, costs this step's
  // speculation (the requests decode one token as without a speculator) and fails nobody.
  std::string message;
  const loom_status status =
      plugin_->try_call(&message, &loom_speculator_vtable::propose, asks_.data(), static_cast<int32_t>(asks_.size()));
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
  if (auto it = tracked_.find(request_id); it != tracked_.end()) {  // gone when the request finished
    it->second.drafted += drafted;
    it->second.accepted += accepted;
  }
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
