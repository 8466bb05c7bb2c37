// The engine: one dedicated thread running step() = schedule -> execute -> update forever, over
// the plugins the config chose. HTTP threads talk to it only through EngineInterface (a locked
// inbox); the engine never waits on a socket.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/constraint_state.hpp"
#include "core/engine/engine_api.hpp"
#include "core/engine/request_metrics.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/runtime_stack.hpp"
#include "core/engine/speculation.hpp"
#include "core/engine/step_time_model.hpp"

namespace loom {

// One draft token for sample_into to verify: the token and the distribution it was drawn from
// (empty: deterministic).
struct DraftToVerify {
  int32_t token = 0;
  std::span<const float> probs;
};

class Engine final : public EngineInterface {
 public:
  // Loads the model and every plugin the config names; throws loom::Error with one clear line
  // on any refusal. The engine thread starts here.
  explicit Engine(const Config& config);
  ~Engine() override;

  uint64_t submit(GenerateRequest request) override;
  void abort(uint64_t request_id) override;
  EngineStats stats() const override;
  const ModelInfo& model_info() const override { return info_; }
  const Tokenizer& tokenizer() const override { return *stack_->tokenizer; }
  const ChatTemplate* chat_template() const override { return stack_->chat_template.get(); }
  EmbeddingWorker* embeddings() const override { return embeddings_.get(); }
  SemanticCacheClient* semantic_cache() const override { return semantic_.get(); }

  // Stops the engine thread; requests still live are finished with kAbort.
  void shutdown();

 private:
  void loop();
  void step();
  // The update part of a step: advance, sample, detokenize, stop, stream, free.
  void update(const StepPlan& plan, int64_t schedule_us, int64_t sampled_us);
  // A sequence's rows the head answered with their best entries alone (HeadSelection), best
  // first: row r's k entries at [r * stride, r * stride + k). Empty (k = 0): whole rows.
  struct SelectedRows {
    std::span<const int32_t> ids;
    std::span<const float> values;
    size_t stride = 0, k = 0;
    bool empty() const { return k == 0; }
    std::span<const int32_t> ids_of(size_t r) const { return ids.subspan(r * stride, k); }
    std::span<const float> values_of(size_t r) const { return values.subspan(r * stride, k); }
  };
  // Sets each planned sequence's top_k: the best entries its sampling reads (head_selection.hpp).
  void select_head_rows(StepPlan& plan) const;
  // One sequence's update from its logits rows [rows, vocab], or from its selected rows when
  // `selected` is not empty (see update); throws when this request fails, which ends it alone.
  void update_seq(RequestState& req, int32_t num_new_tokens, bool all_logits, bool drafts,
                  std::span<const float> rows, const SelectedRows& selected, int64_t schedule_us,
                  int64_t sampled_us);
  // Samples one token for req from a selected row (greedy or top-k alone read it).
  void sample_selected(RequestState& req, std::span<const int32_t> ids, std::span<const float> values,
                       int64_t sampled_us);
  // Asks again to release what requests that ended with a failed release still hold.
  void retry_releases();
  void drain_inbox();
  // Releases everything the request holds, counts it as ended and publishes the stats, then sends
  // its final output (last, from emit(), or the abort/error one): a client that reads /metrics
  // after its answer finds the request ended there.
  void finish(RequestState& req, FinishReason reason, std::string error = {},
              std::optional<GenerationOutput> last = std::nullopt);
  void emit(RequestState& req, std::vector<int32_t> new_tokens, std::vector<RowLogprobs> logprobs);
  void deliver(RequestState& req, GenerationOutput&& out);
  void flush_output(RequestState& req);
  // Samples one token for req from a logits row, with its logprobs when asked for. With a draft,
  // the token is the draft's verification instead (greedy: the argmax, compared by the caller;
  // sampled: speculative sampling against the draft's distribution).
  void sample_into(RequestState& req, std::span<const float> row, int64_t sampled_us,
                   const DraftToVerify* draft = nullptr);
  // Speculative decoding (engine_speculation.cpp): drafts for the running requests before
  // scheduling, and the verification of a sequence's drafts from its rows [num_rows, vocab];
  // returns the rows it read.
  void propose_drafts();
  int32_t verify_sampled(std::span<const float> allowed, RequestState& req, const DraftToVerify& draft);
  size_t verify_drafts(RequestState& req, std::span<const float> rows, const SelectedRows& selected, int32_t num_rows,
                       int64_t sampled_us);
  // Prompt logprobs from `num_rows` consecutive rows of a chunk starting at num_computed_tokens.
  void record_prompt_logprobs(RequestState& req, std::span<const float> rows, int32_t num_rows);
  // At the parent's first sample: the other choices, sharing its prompt's KV (cache fork), each
  // sampling its own first token from the same row.
  void fork_choices(RequestState& parent, std::span<const float> row, int64_t schedule_us,
                    int64_t sampled_us);
  // Registers a request on the engine thread and hands it to the scheduler; nullptr when the
  // scheduler refused it (it is finished with an error and already gone).
  RequestState* admit(std::unique_ptr<RequestState> req);
  void publish_stats();
  // The request left the queue (first scheduled, or finished before): admission's load drops.
  void leave_queue(RequestState& req);
  // The plan's measured step, for the step-time model.
  void observe_step(const StepPlan& plan, int64_t wall_us);

  std::unique_ptr<RuntimeStack> stack_;
  std::unique_ptr<EmbeddingWorker> embeddings_;  // [embedding]; null when not configured
  std::unique_ptr<SemanticCacheClient> semantic_;  // over stack_'s semantic_cache plugin; null when off
  std::unique_ptr<Speculation> speculation_;  // null without a [speculator] table
  SloConfig slo_;
  int32_t step_tokens_ = 2048;  // the scheduler's max_num_batched_tokens, for TTFT prediction
  StepTimeModel step_model_;    // fitted on the engine thread; read by any
  ModelInfo info_;

  // Inbox shared with HTTP threads.
  mutable std::mutex inbox_mutex_;
  std::condition_variable inbox_cv_;
  std::vector<std::unique_ptr<RequestState>> inbox_requests_;
  std::vector<uint64_t> inbox_aborts_;
  bool stopping_ = false;
  std::atomic<uint64_t> next_id_{1};
  std::mt19937_64 seed_rng_;  // guarded by inbox_mutex_: seeds for requests without one
  // Admission's view of the queue (guarded by inbox_mutex_ so check and enqueue are one step).
  int32_t queued_requests_ = 0;
  int64_t queued_tokens_ = 0;

  // Engine-thread state.
  std::unordered_map<uint64_t, std::unique_ptr<RequestState>> requests_;
  std::unordered_map<uint64_t, std::vector<uint64_t>> groups_;  // submitted id -> live choice ids
  std::vector<uint64_t> unreleased_;  // ended requests whose release failed: retried each loop
  ConstraintRegistry constraints_;
  std::vector<float> masked_row_;  // [vocab]: a constrained request's row after its mask
  std::vector<float> logits_;  // [n_logits, vocab]: one per sampled sequence, a chunk's all for prompt logprobs
  HeadSelection head_selection_;  // the best entries of the rows that asked for them alone
  std::vector<float> processed_row_;    // [vocab] the row after a request's logits processors
  std::vector<int32_t> penalty_counts_;  // [vocab] zeros between uses (logits_processors scratch)
  std::vector<int32_t> eog_ids_;         // end-of-generation tokens, banned below min_tokens
  std::vector<double> target_probs_;     // [vocab] speculative sampling's target distribution

  mutable std::mutex stats_mutex_;
  // Engine thread: step and grammar time (EngineStats::engine_steps ...), copied at publish.
  int64_t engine_steps_ = 0, grammar_steps_ = 0;
  int64_t engine_step_us_ = 0, grammar_step_us_ = 0, grammar_ns_ = 0;
  int64_t step_grammar_ns_ = 0;  // this step's so far
  bool step_grammar_ = false;
  bool copies_at_publish_ = false;  // engine thread: tier copies were pending at the last publish
  EngineStats stats_;
  // Histograms are thread-safe on their own; per-request timelines are engine-thread only.
  RequestMetrics metrics_;
  std::thread thread_;
};

}  // namespace loom
