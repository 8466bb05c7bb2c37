#include "core/engine/engine.hpp"

#include <algorithm>
#include <chrono>
#include <span>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/engine/admission.hpp"
#include "core/engine/embedding_worker.hpp"
#include "core/engine/head_selection.hpp"
#include "core/engine/semantic_cache_client.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

int64_t now_us() {
  return std::chrono::duration_cast<std::chrono::microseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The scheduler's per-step token budget, for admission's TTFT prediction: its
// max_num_batched_tokens when its table sets one, else the budget of the in-tree schedulers.
int32_t step_tokens_of(const PluginTable& scheduler) {
  const auto json = nlohmann::json::parse(scheduler.config_json, nullptr, /*allow_exceptions=*/false);
  if (json.is_object()) {
    const auto it = json.find("max_num_batched_tokens");
    if (it != json.end() && it->is_number_integer() && it->get<int64_t>() > 0)
      return static_cast<int32_t>(std::min<int64_t>(it->get<int64_t>(), 1 << 30));
  }
  return 2048;
}

// The [slo] class defaults fill what the request left unset.
void apply_class_defaults(const SloConfig& slo, GenerateRequest& request) {
  for (const SloClassConfig& c : slo.classes) {
    if (c.priority != request.priority) continue;
    if (request.slo.ttft_ms == 0) request.slo.ttft_ms = c.ttft_ms;
    if (request.slo.tpot_ms == 0) request.slo.tpot_ms = c.tpot_ms;
  }
}

}  // namespace

const char* finish_reason_name(FinishReason r) {
  switch (r) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kAbort: return "abort";
    case FinishReason::kError: return "error";
  }
  return "error";
}

Engine::Engine(const Config& config)
    : stack_(std::make_unique<RuntimeStack>(config)),
      slo_(config.slo),
      step_tokens_(step_tokens_of(config.scheduler)),
      seed_rng_(config.runtime.seed),
      constraints_(*stack_->tokenizer),
      metrics_(stack_->max_model_len, config.slo.goodput_window_s) {
  stack_->set_step_model(&step_model_);
  if (!config.embedding.path.empty()) embeddings_ = make_embedding_worker(config);
  stack_->create_semantic_cache(config, embeddings_.get());
  semantic_ = make_semantic_cache_client(stack_->semantic_cache_plugin(), config, embeddings_.get());
  if (auto plugin = stack_->create_speculator(config)) {
    speculation_ = std::make_unique<Speculation>(std::move(plugin), config.speculation,
                                                 stack_->tokenizer->vocab_size(), stack_->max_model_len, step_model_);
  }
  if (slo_.calibration_steps > 0) {
    stack_->calibrate(slo_.calibration_steps, step_model_);
    const StepCoefficients c = step_model_.coefficients();
    LOOM_LOG_INFO("step-time model after {} calibration steps: {:.1f} us + {:.3f} us/prefill token + {:.3f} us/decode "
                  "token + {:.5f} us/KV token",
                  c.samples, c.base_us, c.per_prefill_token_us, c.per_decode_token_us, c.per_kv_token_us);
  }
  info_.name = config.model.name;
  info_.max_model_len = stack_->max_model_len;
  info_.vocab_size = stack_->tokenizer->vocab_size();
  for (int32_t id = 0; id < info_.vocab_size; ++id)
    if (stack_->tokenizer->is_eog(id)) eog_ids_.push_back(id);
  penalty_counts_.assign(static_cast<size_t>(info_.vocab_size), 0);
  info_.created = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
  publish_stats();
  thread_ = std::thread([this] { loop(); });
}

Engine::~Engine() { shutdown(); }

void Engine::shutdown() {
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    if (stopping_ && !thread_.joinable()) return;
    stopping_ = true;
  }
  inbox_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

uint64_t Engine::submit(GenerateRequest request) {
  const auto& prompt = request.prompt;
  LOOM_CHECK(!prompt.empty(), "prompt: must contain at least one token");
  LOOM_CHECK(request.sampling.max_tokens >= 1, "max_tokens: must be at least 1");
  const int32_t vocab = info_.vocab_size;
  for (int32_t id : prompt) {
    LOOM_CHECK(id >= 0 && id < vocab, "prompt: token id " + std::to_string(id) +
                                          " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  const int64_t total = static_cast<int64_t>(prompt.size()) + request.sampling.max_tokens;
  LOOM_CHECK(total <= info_.max_model_len,
             "max_tokens: prompt (" + std::to_string(prompt.size()) + " tokens) + max_tokens (" +
                 std::to_string(request.sampling.max_tokens) + ") = " + std::to_string(total) +
                 " exceeds the model's context length " + std::to_string(info_.max_model_len));
  std::string reason;
  LOOM_CHECK(stack_->kv_fits(static_cast<int32_t>(total), reason), "max_tokens: " + reason);

  const int32_t n = request.n;
  LOOM_CHECK(n >= 1 && n <= kMaxChoices,
             "n: must be in [1, " + std::to_string(kMaxChoices) + "], got " + std::to_string(n));
  if (const auto& lp = request.sampling.logprobs) {
    LOOM_CHECK(*lp >= 0 && *lp <= kMaxLogprobs, "logprobs: must be in [0, " + std::to_string(kMaxLogprobs) +
                                                    "], got " + std::to_string(*lp));
  }
  if (const auto& lp = request.sampling.prompt_logprobs) {
    LOOM_CHECK(*lp >= 0 && *lp <= kMaxLogprobs, "prompt_logprobs: must be in [0, " +
                                                    std::to_string(kMaxLogprobs) + "], got " + std::to_string(*lp));
  }
  const LogitsProcessing& proc = request.sampling.processing;
  for (const auto& [token, bias] : proc.logit_bias) {
    LOOM_CHECK(token >= 0 && token < vocab, "logit_bias: token id " + std::to_string(token) +
                                                " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  for (int32_t token : proc.stop_token_ids) {
    LOOM_CHECK(token >= 0 && token < vocab, "stop_token_ids: token id " + std::to_string(token) +
                                                " is outside the vocabulary [0, " + std::to_string(vocab) + ")");
  }
  LOOM_CHECK(proc.repetition_penalty > 0.0f, "repetition_penalty: must be > 0");

  // With a forking cache, choice 0 alone is queued and forks the others once its prompt is
  // computed; otherwise every choice is its own request computing its own prompt.
  const bool share = stack_->can_fork();
  const int32_t queued = share ? 1 : n;
  const uint64_t id = next_id_.fetch_add(static_cast<uint64_t>(queued));
  apply_class_defaults(slo_, request);
  const int64_t arrival = now_us();
  std::lock_guard<std::mutex> lock(inbox_mutex_);
  LOOM_CHECK(!stopping_, "the engine is shutting down");
  {
    QueueLoad load{queued_requests_, queued_tokens_, 0};
    {
      std::lock_guard<std::mutex> stats_lock(stats_mutex_);
      load.running = stats_.num_running;
    }
    const AdmissionAsk ask{request.priority, static_cast<int32_t>(prompt.size()), request.slo.ttft_ms};
    if (auto refusal = admission_check(slo_, load, ask, step_model_.coefficients(), step_tokens_)) {
      metrics_.on_rejected(refusal->reason);
      throw Overloaded(std::move(*refusal));
    }
  }
  const uint64_t seed = request.sampling.seed ? *request.sampling.seed : seed_rng_();
  for (int32_t i = 0; i < queued; ++i) {
    GenerateRequest copy = i + 1 < queued ? request : std::move(request);
    auto state = std::make_unique<RequestState>(id + static_cast<uint64_t>(i), std::move(copy),
                                                *stack_->tokenizer, arrival, seed + static_cast<uint64_t>(i),
                                                id, i);
    if (share) state->num_unforked = n - 1;
    ++queued_requests_;
    queued_tokens_ += state->num_prompt_tokens;
    inbox_requests_.push_back(std::move(state));
  }
  inbox_cv_.notify_one();
  return id;
}

void Engine::abort(uint64_t request_id) {
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    inbox_aborts_.push_back(request_id);
  }
  inbox_cv_.notify_one();
}

EngineStats Engine::stats() const {
  EngineStats s;
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    s = stats_;
  }
  metrics_.snapshot_into(s, now_us());
  s.slo.step_model = step_model_.coefficients();
  if (semantic_) s.semantic_cache = semantic_->snapshot();
  return s;
}

void Engine::loop() {
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(inbox_mutex_);
      const auto work = [&] {
        return stopping_ || !inbox_requests_.empty() || !inbox_aborts_.empty() || !requests_.empty();
      };
      // Idle, but the tier copy worker still writes spills: come back shortly to publish the
      // staging buffers they free, or the stats would show them in use until the next request.
      if (copies_at_publish_) {
        inbox_cv_.wait_for(lock, std::chrono::milliseconds(1), work);
      } else if (!unreleased_.empty()) {  // a failed release is asked again, idle or not
        inbox_cv_.wait_for(lock, std::chrono::milliseconds(10), work);
      } else {
        inbox_cv_.wait(lock, work);
      }
      if (stopping_) break;
    }
    drain_inbox();
    retry_releases();
    if (!requests_.empty()) {
      try {
        step();
      } catch (const std::exception& e) {
        // A failed step cannot be retried safely: every live request ends with the error.
        LOOM_LOG_ERROR("engine step failed: {}", e.what());
        std::vector<uint64_t> ids;
        for (auto& [id, req] : requests_) ids.push_back(id);
        for (uint64_t id : ids) finish(*requests_.at(id), FinishReason::kError, e.what());
      }
    }
    publish_stats();
  }
  drain_inbox();
  std::vector<uint64_t> ids;
  for (auto& [id, req] : requests_) ids.push_back(id);
  for (uint64_t id : ids) finish(*requests_.at(id), FinishReason::kAbort);
  publish_stats();
}

void Engine::retry_releases() {
  std::vector<uint64_t> ids;
  ids.swap(unreleased_);
  for (uint64_t id : ids) {
    try {
      stack_->release(id);
    } catch (const std::exception& e) {
      LOOM_LOG_DEBUG("request {}: releasing its KV blocks failed again: {}", id, e.what());
      unreleased_.push_back(id);
    }
  }
}

void Engine::drain_inbox() {
  std::vector<std::unique_ptr<RequestState>> arrivals;
  std::vector<uint64_t> aborts;
  {
    std::lock_guard<std::mutex> lock(inbox_mutex_);
    arrivals.swap(inbox_requests_);
    aborts.swap(inbox_aborts_);
  }
  for (auto& req : arrivals) admit(std::move(req));
  for (uint64_t group : aborts) {
    auto it = groups_.find(group);
    if (it == groups_.end()) continue;
    const std::vector<uint64_t> ids = it->second;  // finish() edits the group
    for (uint64_t id : ids) {
      if (auto r = requests_.find(id); r != requests_.end()) finish(*r->second, FinishReason::kAbort);
    }
  }
}

RequestState* Engine::admit(std::unique_ptr<RequestState> req) {
  const uint64_t id = req->id;
  groups_[req->group].push_back(id);
  RequestState* state = (requests_[id] = std::move(req)).get();
  if (state->sampling.grammar) state->constraint = constraints_.start(state->sampling.grammar);
  metrics_.on_arrival(id, state->arrival_time_us, state->priority, state->slo);
  try {
    stack_->scheduler_add(state->view());
  } catch (const std::exception& e) {
    finish(*state, FinishReason::kError, e.what());  // erases it from requests_: state dangles
    return nullptr;
  }
  return state;
}

// schedule -> execute -> update.
void Engine::step() {
  // schedule: the scheduler decides how many tokens each request advances; the preemptions it
  // proposed are already carried out (swapped or freed, reset to recompute).
  const int64_t schedule_us = now_us();
  if (speculation_) propose_drafts();
  // The step-time model prices the target's pass; a proposal is priced by its own model.
  const int64_t proposed_us = speculation_ ? now_us() : schedule_us;
  StepPlan& plan = stack_->schedule(
      [this](uint64_t id) -> RequestState* {
        auto it = requests_.find(id);
        return it == requests_.end() ? nullptr : it->second.get();
      },
      schedule_us);
  for (const auto& [id, reason] : plan.rejected) {
    if (auto it = requests_.find(id); it != requests_.end()) finish(*it->second, FinishReason::kError, reason);
  }
  if (speculation_) speculation_->fit_to_plan(plan);
  // Queue depth and KV use change at scheduling: publish before the (long) forward pass.
  publish_stats();
  if (plan.seqs.empty()) return;
  for (const PlannedSeq& s : plan.seqs) {
    metrics_.on_scheduled(s.request->id, schedule_us);
    leave_queue(*s.request);
  }
  const int64_t step_tokens = plan.num_scheduled_tokens;

  // execute: one flat batch of every scheduled token the tier did not restore.
  stack_->prepare(plan);
  for (const auto& [id, error] : plan.failed) {
    LOOM_LOG_WARN("request {}: failed while preparing: {}", id, error);
    if (auto it = requests_.find(id); it != requests_.end()) finish(*it->second, FinishReason::kError, error);
  }
  if (plan.batch.empty()) return;
  if (speculation_) speculation_->mark_logits(plan);
  select_head_rows(plan);
  stack_->execute(plan, logits_, head_selection_);
  // Every token of this step is sampled at (nearly) the same moment: one clock read for all.
  const int64_t sampled_us = now_us();
  metrics_.on_step(step_tokens);
  observe_step(plan, sampled_us - proposed_us);

  step_grammar_ = false;
  step_grammar_ns_ = 0;
  update(plan, schedule_us, sampled_us);
  const int64_t step_us = now_us() - schedule_us;
  ++engine_steps_;
  engine_step_us_ += step_us;
  if (step_grammar_) {
    ++grammar_steps_;
    grammar_step_us_ += step_us;
    grammar_ns_ += step_grammar_ns_;
  }
}

// update: advance, sample, detokenize, stop, stream, free.
void Engine::update(const StepPlan& plan, int64_t schedule_us, int64_t sampled_us) {
  const auto vocab = static_cast<size_t>(info_.vocab_size);
  size_t logit_row = 0;
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    const PlannedSeq& seq = plan.seqs[i];
    RequestState& req = *seq.request;
    const uint64_t id = req.id;
    // Rows [logit_row, logit_row + rows): every position of a chunk verifying drafts or scoring its
    // prompt, else the last one when the chunk completes the request's tokens.
    const bool drafts = speculation_ && speculation_->num_drafts(id) > 0;
    const size_t rows = drafts || plan.batch[i].all_logits ? static_cast<size_t>(seq.num_new_tokens)
                                                           : (plan.batch[i].need_logits ? 1 : 0);
    const std::span<const float> seq_rows = std::span<const float>(logits_).subspan(logit_row * vocab, rows * vocab);
    SelectedRows selected;
    if (rows > 0 && plan.batch[i].top_k > 0 && head_selection_.stride > 0) {
      const auto stride = static_cast<size_t>(head_selection_.stride);
      selected = {std::span<const int32_t>(head_selection_.ids).subspan(logit_row * stride, rows * stride),
                  std::span<const float>(head_selection_.values).subspan(logit_row * stride, rows * stride), stride,
                  static_cast<size_t>(plan.batch[i].top_k)};
    }
    logit_row += rows;
    try {
      update_seq(req, seq.num_new_tokens, plan.batch[i].all_logits, drafts, seq_rows, selected, schedule_us,
                 sampled_us);
    } catch (const std::exception& e) {
      // Committing, sampling, logits processing and detokenizing touch this request alone: its
      // failure ends it and no other.
      LOOM_LOG_WARN("request {}: failed while updating: {}", id, e.what());
      if (auto it = requests_.find(id); it != requests_.end()) finish(*it->second, FinishReason::kError, e.what());
    }
  }
}

void Engine::select_head_rows(StepPlan& plan) const {
  const int32_t limit = std::min(stack_->head_top_k(), info_.vocab_size);
  for (size_t i = 0; i < plan.seqs.size(); ++i) {
    SeqSchedule& seq = plan.batch[i];
    const RequestState& req = *plan.seqs[i].request;
    // all_logits is a chunk verifying drafts (speculation marked it) or scoring its prompt.
    const bool drafts = speculation_ && speculation_->num_drafts(req.id) > 0;
    seq.top_k = seq.need_logits && (!seq.all_logits || drafts) ? head_top_k_of(req, limit, drafts) : 0;
  }
}

void Engine::update_seq(RequestState& req, int32_t num_new_tokens, bool all_logits, bool drafts,
                        std::span<const float> rows, const SelectedRows& selected, int64_t schedule_us,
                        int64_t sampled_us) {
  // A NaN or infinity in a row means this request's numbers went bad in the forward pass (each
  // row's arithmetic is its own): it ends before its blocks are committed for prefix reuse. A
  // selected row shows its best entries: a NaN there, or an infinite best, is caught the same way.
  bool finite = true;
  if (selected.empty()) {
    for (float x : rows) finite &= x - x == 0.0f;  // 0 for every finite x, NaN for NaN and infinity
  } else {
    for (size_t r = 0; r * selected.stride < selected.ids.size(); ++r)
      for (float x : selected.values_of(r)) finite &= x - x == 0.0f;
  }
  LOOM_CHECK(finite, "the model produced non-finite logits (NaN or infinity) for this request");
  if (drafts) {
    verify_drafts(req, rows, selected, num_new_tokens, sampled_us);
    return;
  }
  if (all_logits) record_prompt_logprobs(req, rows, num_new_tokens);
  req.num_computed_tokens += num_new_tokens;
  stack_->cache_commit(req.view());
  if (req.num_computed_tokens < req.num_tokens()) return;  // a prefill chunk: nothing to sample
  if (!selected.empty()) {  // greedy or top-k sampling alone reads it (head_selection.hpp)
    const size_t last = selected.ids.size() / selected.stride - 1;
    sample_selected(req, selected.ids_of(last), selected.values_of(last), sampled_us);
    return;
  }
  const std::span<const float> row = rows.last(static_cast<size_t>(info_.vocab_size));
  if (req.num_unforked > 0) fork_choices(req, row, schedule_us, sampled_us);
  sample_into(req, row, sampled_us);
}

void Engine::sample_selected(RequestState& req, std::span<const int32_t> ids, std::span<const float> values,
                             int64_t sampled_us) {
  // What sample_into does for a request that nothing but its sampler reads a row of.
  const int32_t token = stack_->sample_top(ids, values, req.sampling, req.rng);
  req.token_ids.push_back(token);
  metrics_.on_token(req.id, sampled_us);
  emit(req, {token}, {});
}

void Engine::record_prompt_logprobs(RequestState& req, std::span<const float> rows, int32_t num_rows) {
  const int32_t vocab = info_.vocab_size;
  const int32_t top_n = *req.sampling.prompt_logprobs;
  for (int32_t r = 0; r < num_rows; ++r) {
    const int32_t pos = req.num_computed_tokens + r;  // this row scores the token at pos + 1
    if (pos + 1 >= req.num_prompt_tokens) break;
    if (pos < static_cast<int32_t>(req.prompt_logprobs.size())) continue;  // recorded before a preemption
    const std::span<const float> row = rows.subspan(static_cast<size_t>(r) * vocab, static_cast<size_t>(vocab));
    const int32_t token = req.token_ids[static_cast<size_t>(pos + 1)];
    RowLogprobs& record = req.prompt_logprobs.emplace_back();
    Sampler::logprobs(row, token, top_n, record);
    const float l = row[static_cast<size_t>(token)];
    record.sampled_rank = 1 + static_cast<int32_t>(std::count_if(row.begin(), row.end(), [l](float x) { return x > l; }));
  }
}

void Engine::sample_into(RequestState& req, std::span<const float> raw_row, int64_t sampled_us,
                         const DraftToVerify* draft) {
  std::span<const float> row = raw_row;
  const LogitsProcessing& proc = req.sampling.processing;
  if (proc.active()) {
    // The row may be shared by forked choices: transform a copy.
    processed_row_.assign(raw_row.begin(), raw_row.end());
    const std::span<const int32_t> tokens(req.token_ids);
    apply_logits_processors(processed_row_, proc, tokens.first(static_cast<size_t>(req.num_prompt_tokens)),
                            tokens.subspan(static_cast<size_t>(req.num_prompt_tokens)), eog_ids_, penalty_counts_);
    row = processed_row_;
  }
  // The grammar masks the processed row: penalties and biases move probability only among the
  // tokens it allows.
  std::span<const float> allowed = row;
  // Grammar time: the mask here, the state update and the forced tokens below.
  // Clocks are read only for constrained requests: a free one pays nothing here.
  using Clock = std::chrono::steady_clock;
  auto grammar_time = [&](Clock::time_point from) {
    step_grammar_ = true;
    step_grammar_ns_ += std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - from).count();
  };
  if (req.constraint) {
    const Clock::time_point grammar_start = Clock::now();
    const bool masked = req.constraint->mask(row, masked_row_);
    grammar_time(grammar_start);
    if (!masked) {
      finish(req, FinishReason::kError, "grammar: no token of the vocabulary can continue the output");
      return;
    }
    allowed = masked_row_;
  }
  const int32_t token = draft != nullptr && req.sampling.temperature > 0.0f
                            ? verify_sampled(allowed, req, *draft)
                            : stack_->sample(allowed, req.sampling, req.rng);
  const Clock::time_point accept_start = req.constraint ? Clock::now() : Clock::time_point{};
  if (req.constraint && !req.constraint->accept(token)) {
    finish(req, FinishReason::kError, "grammar: the model gives every token the grammar allows no probability");
    return;
  }
  if (req.constraint) grammar_time(accept_start);
  std::vector<RowLogprobs> logprobs;
  if (req.sampling.logprobs) {
    logprobs.emplace_back();
    Sampler::logprobs(row, token, *req.sampling.logprobs, logprobs.back());
  }
  req.token_ids.push_back(token);
  std::vector<int32_t> emitted{token};
  if (req.constraint) {
    // Forced tokens have no logits row of their own, so none when logprobs are asked for.
    const Clock::time_point forced_start = Clock::now();
    if (!req.sampling.logprobs) {
      const int32_t room = std::min(req.sampling.max_tokens - req.num_generated(), info_.max_model_len - req.num_tokens());
      req.constraint->append_forced(emitted, room);
      req.token_ids.insert(req.token_ids.end(), emitted.begin() + 1, emitted.end());
    }
    grammar_time(forced_start);
  }
  metrics_.on_token(req.id, sampled_us);
  emit(req, std::move(emitted), std::move(logprobs));
}

void Engine::fork_choices(RequestState& parent, std::span<const float> row, int64_t schedule_us,
                          int64_t sampled_us) {
  const int32_t count = parent.num_unforked;
  parent.num_unforked = 0;
  // The parent's view now covers exactly its computed prompt: what the children share.
  const loom_request_view parent_view = parent.view();
  for (int32_t i = 1; i <= count; ++i) {
    GenerateRequest request;
    request.prompt.assign(parent.token_ids.begin(), parent.token_ids.begin() + parent.num_prompt_tokens);
    request.sampling = parent.sampling;
    request.priority = parent.priority;
    request.slo = parent.slo;
    request.tenant_id = parent.tenant_id;
    request.cache_salt = parent.cache_salt;
    request.sink = parent.sink;
    const uint64_t child_id = next_id_.fetch_add(1);
    auto child = std::make_unique<RequestState>(child_id, std::move(request), *stack_->tokenizer,
                                                parent.arrival_time_us, parent.seed + static_cast<uint64_t>(i),
                                                parent.group, parent.index + i);
    child->queued = false;  // never counted: it is scheduled the moment it exists
    // No room to share: the child computes its prompt itself, as a fallback request would.
    if (!stack_->fork(parent_view, child_id)) {
      LOOM_LOG_DEBUG("request {}: no KV room to fork choice {}; it recomputes its prompt", parent.group, i);
    }
    child->prompt_logprobs = parent.prompt_logprobs;
    RequestState* admitted = admit(std::move(child));
    if (admitted == nullptr) continue;  // refused by the scheduler (finished with an error)
    metrics_.on_scheduled(child_id, schedule_us);
    sample_into(*admitted, row, sampled_us);
  }
}

void Engine::emit(RequestState& req, std::vector<int32_t> new_tokens, std::vector<RowLogprobs> logprobs) {
  const Tokenizer& tok = *stack_->tokenizer;
  GenerationOutput out;
  out.index = req.index;
  out.token_ids = new_tokens;
  out.logprobs = std::move(logprobs);
  out.prompt_tokens = req.num_prompt_tokens;
  out.completion_tokens = req.num_generated();
  if (req.sampling.prompt_logprobs && !req.prompt_logprobs_sent) {
    out.prompt_logprobs = req.prompt_logprobs;
    req.prompt_logprobs_sent = true;
  }

  std::optional<FinishReason> finish_reason;
  std::string text;
  const std::vector<int32_t>& stop_ids = req.sampling.processing.stop_token_ids;
  for (int32_t token : new_tokens) {
    if ((!req.sampling.ignore_eos && tok.is_eog(token)) ||
        std::find(stop_ids.begin(), stop_ids.end(), token) != stop_ids.end()) {
      finish_reason = FinishReason::kStop;  // the end-of-generation token's text is not returned
      break;
    }
    text += req.detokenizer.push(token);
  }
  const bool at_limit = req.num_generated() >= req.sampling.max_tokens ||
                        req.num_tokens() >= info_.max_model_len;
  // A finished grammar ends the output (stop) even when the limit is reached with it.
  const bool grammar_done = req.constraint && req.constraint->is_finished();
  if (!finish_reason && (at_limit || grammar_done)) {
    finish_reason = grammar_done ? FinishReason::kStop : FinishReason::kLength;
    text += req.detokenizer.flush();
  }
  StopChecker::Result checked = req.stop_checker.push(text);
  out.text = std::move(checked.text);
  if (checked.stopped) {
    finish_reason = FinishReason::kStop;
  } else if (finish_reason) {
    out.text += req.stop_checker.flush();
  }
  out.finish = finish_reason;
  if (out.token_ids.empty() && out.text.empty() && !out.finish) return;
  const bool done = out.finish.has_value();
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    stats_.generation_tokens_total += static_cast<int64_t>(new_tokens.size());
  }
  if (done) {
    finish(req, *finish_reason, {}, std::move(out));
  } else {
    deliver(req, std::move(out));
  }
}

// An output joins the step's pending one while the request coalesces (see request_state.hpp);
// the last output of the request, or flush_output(), sends what is pending.
void Engine::deliver(RequestState& req, GenerationOutput&& out) {
  if (req.pending_output) {
    GenerationOutput merged = std::move(*req.pending_output);
    req.pending_output.reset();
    merged.token_ids.insert(merged.token_ids.end(), out.token_ids.begin(), out.token_ids.end());
    merged.logprobs.insert(merged.logprobs.end(), std::make_move_iterator(out.logprobs.begin()),
                           std::make_move_iterator(out.logprobs.end()));
    if (merged.prompt_logprobs.empty()) merged.prompt_logprobs = std::move(out.prompt_logprobs);
    merged.text += out.text;
    merged.finish = out.finish;
    merged.error = std::move(out.error);
    merged.completion_tokens = out.completion_tokens;
    out = std::move(merged);
  }
  if (req.coalesce_outputs && !out.finish) {
    req.pending_output = std::move(out);
    return;
  }
  req.sink(std::move(out));
}

void Engine::flush_output(RequestState& req) {
  req.coalesce_outputs = false;
  if (!req.pending_output) return;
  GenerationOutput out = std::move(*req.pending_output);
  req.pending_output.reset();
  req.sink(std::move(out));
}

void Engine::leave_queue(RequestState& req) {
  if (!req.queued) return;
  req.queued = false;
  std::lock_guard<std::mutex> lock(inbox_mutex_);
  --queued_requests_;
  queued_tokens_ -= req.num_prompt_tokens;
}

// Prompt tokens (a chunk, or a recompute after preemption) and decode tokens are told apart by
// whether the request's prompt was already computed; kv counts every sequence's context after it.
void Engine::observe_step(const StepPlan& plan, int64_t wall_us) {
  StepSample sample;
  sample.wall_us = wall_us;
  bool prompt = false;  // any prompt token (a verification's rows are not)
  for (size_t i = 0; i < plan.batch.size(); ++i) {
    const SeqSchedule& b = plan.batch[i];
    const RequestState& req = *plan.seqs[i].request;
    const auto n = static_cast<int32_t>(b.token_ids.size());
    const bool decode = n == 1 && req.num_computed_tokens >= req.num_prompt_tokens;
    prompt = prompt || req.num_computed_tokens < req.num_prompt_tokens;
    (decode ? sample.decode_tokens : sample.prefill_tokens) += n;
    sample.kv_tokens += b.start_pos + n;
  }
  step_model_.observe(sample);
  if (speculation_ && !prompt) speculation_->observe_step(sample.prefill_tokens + sample.decode_tokens, wall_us);
}

void Engine::finish(RequestState& req, FinishReason reason, std::string error,
                    std::optional<GenerationOutput> last) {
  const uint64_t id = req.id;
  leave_queue(req);
  if (speculation_) speculation_->finish(req);
  try {
    stack_->release(id);
  } catch (const std::exception& e) {
    // The request ends all the same; what still holds its blocks is asked again at the next step
    // (a cache or tier that failed once must not leak them for good, nor stop the engine).
    LOOM_LOG_ERROR("request {}: releasing its KV blocks failed (retried at the next step): {}", id, e.what());
    unreleased_.push_back(id);
  }
  // Counted before the final output goes out: the client may read /metrics as soon as it has it.
  {
    std::lock_guard<std::mutex> lock(stats_mutex_);
    if (reason == FinishReason::kStop || reason == FinishReason::kLength) {
      ++stats_.requests_finished;
      ++(reason == FinishReason::kStop ? stats_.requests_finished_stop : stats_.requests_finished_length);
      // The prompt is processed once per request however many choices share it.
      if (req.index == 0) stats_.prompt_tokens_total += req.num_prompt_tokens;
    }
  }
  metrics_.on_finished(id, reason, req.num_prompt_tokens, req.num_generated(), now_us());
  publish_stats();  // the gauges too (running, KV usage) no longer hold the request
  if (last) {
    deliver(req, std::move(*last));  // sends what was pending with it
  } else {
    flush_output(req);  // tokens accepted earlier in this step go out before the error or abort
  }
  // Abort/error send a final output here, also for the choices the request had yet to fork (so
  // every choice of the request ends).
  if (reason == FinishReason::kAbort || reason == FinishReason::kError) {
    for (int32_t i = 0; i <= req.num_unforked; ++i) {
      GenerationOutput out;
      out.index = req.index + i;
      out.finish = reason;
      out.error = error;
      out.prompt_tokens = req.num_prompt_tokens;
      out.completion_tokens = i == 0 ? req.num_generated() : 0;
      req.sink(std::move(out));
    }
  }
  if (auto g = groups_.find(req.group); g != groups_.end()) {
    std::erase(g->second, id);
    if (g->second.empty()) groups_.erase(g);
  }
  requests_.erase(id);
}

void Engine::publish_stats() {
  // Read before the stats: once no copy is pending, every staging buffer a copy held is free.
  copies_at_publish_ = stack_->tier_copies_pending();
  std::lock_guard<std::mutex> lock(stats_mutex_);
  stack_->read_stats(stats_);
  stats_.engine_steps = engine_steps_;
  stats_.engine_step_seconds = static_cast<double>(engine_step_us_) * 1e-6;
  stats_.grammar_steps = grammar_steps_;
  stats_.grammar_step_seconds = static_cast<double>(grammar_step_us_) * 1e-6;
  stats_.grammar_seconds = static_cast<double>(grammar_ns_) * 1e-9;
  if (speculation_) stats_.spec_decode = speculation_->stats();
}

}  // namespace loom
