// Everything the engine thread drives, assembled from a config in dependency order:
//   model file -> tokenizer -> thread pool -> plugin host -> cache (asks for the pool) -> KV pool
//   -> attention + quantization -> model executor -> scheduler -> (cache_offload), then the
// semantic_cache once the engine has its encoder (create_semantic_cache), and the calls one step
// makes into them (see RuntimeStack). Members are destroyed in reverse, so
// every plugin instance is gone before the libraries and the thread pool.
#pragma once

#include <cstdint>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/config/config.hpp"
#include "core/engine/kv_staging.hpp"
#include "core/engine/plugin_handles.hpp"
#include "core/engine/prefix_tiers.hpp"
#include "core/engine/request_state.hpp"
#include "core/engine/step_plan.hpp"
#include "core/engine/step_scheduler.hpp"
#include "core/engine/step_time_model.hpp"
#include "core/engine/swap_coordinator.hpp"
#include "core/executor/batch_builder.hpp"
#include "core/executor/kv_pool.hpp"
#include "core/executor/llama_model.hpp"
#include "core/executor/model_executor.hpp"
#include "core/executor/model_source.hpp"
#include "core/engine/sampler.hpp"
#include "core/template/chat_template.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom {

class DraftModelService;
class EmbeddingWorker;

// The plugins a forward pass calls: attention, created for the model's heads and the KV pool's
// dtype and block size, then quantization, both on the CPU. The engine's stack and
// loom-bench-model both run the executor over these. quantization is destroyed first (reverse
// order), and both must outlive the executor that calls them.
struct ForwardPlugins {
  std::unique_ptr<LoadedPlugin> attention;
  std::unique_ptr<LoadedPlugin> quantization;

  AttentionOps attention_ops() const { return {attention->self(), &attention->vtable<loom_attention_vtable>()}; }
  QuantOps quant_ops() const { return {quantization->self(), &quantization->vtable<loom_quantization_vtable>()}; }
};
ForwardPlugins create_forward_plugins(PluginHost& host, const PluginSpec& attention, const PluginSpec& quantization,
                                      const LlamaHparams& hparams, loom_dtype kv_dtype, int32_t block_size);

// The engine's plugin stack, built from a config (the constructor is the assembly), with the
// calls one step makes: schedule (StepScheduler), prepare (step_plan), execute (batch builder +
// executor), sample, and release (SwapCoordinator). Engine-thread only.
class RuntimeStack {
 public:
  explicit RuntimeStack(const Config& config);
  ~RuntimeStack();

  // The longest request (prompt + max_tokens) the KV pool can ever hold, found once at load by
  // asking the cache plugin; used to refuse requests synchronously on HTTP threads.
  bool kv_fits(int32_t max_total_tokens, std::string& reason) const;

  // Schedulers see this model's predictions (loom_sched_context::predicted_step_us); it must
  // outlive the stack. Null: they see 0.
  void set_step_model(const StepTimeModel* model) { step_scheduler_->set_step_model(model); }
  // Times `steps` synthetic steps of varied shape (prefill tokens, decodes, context) and feeds
  // them to `model`. Only before the first request: it writes K/V into free blocks and wipes
  // them after with the last block, still zero.
  void calibrate(int32_t steps, StepTimeModel& model);

  void scheduler_add(const loom_request_view& view);
  using RequestLookup = StepScheduler::RequestLookup;
  // This step's plan, preemptions already carried out. The plan is reused: valid until the next
  // schedule() call.
  StepPlan& schedule(const RequestLookup& lookup, int64_t now_us);
  // Copy-on-write copies the cache queued while scheduling, then the plan's cached prefixes and
  // swapped-in tokens; afterwards plan.batch is what execute() runs.
  void prepare(StepPlan& plan);
  // Runs the model on plan.batch; logits get one row per sequence that completes its tokens
  // this step (in plan order).
  // Rows whose sequence asks for a top_k (SeqSchedule::top_k) get their best entries in
  // `selection` and no logits row (model_executor.hpp HeadSelection).
  void execute(const StepPlan& plan, std::vector<float>& logits, HeadSelection& selection);
  int32_t sample(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng);
  // sample() from a row's best entries (the head's selection): the same token.
  int32_t sample_top(std::span<const int32_t> ids, std::span<const float> values, const SamplingParams& params,
                     std::mt19937_64& rng);
  // The largest top_k a step may ask the head to select ([runtime] head_top_k); 0 when the
  // quantization plugin cannot (no linear_top_k) or the model soft-caps its logits.
  int32_t head_top_k() const { return head_top_k_; }
  // The distribution sample() draws from, dense [vocab] (speculative sampling's target).
  void distribution(std::span<const float> logits, const SamplingParams& params, std::vector<double>& probs);
  // The [speculator] plugin, created for this model with the host's draft models (speculator
  // interface 1.1, served by this stack, which must outlive the plugin); null without the table.
  std::unique_ptr<LoadedPlugin> create_speculator(const Config& config);
  // Rejected drafts' rollback: the sequence keeps its first num_tokens tokens' blocks (a cache
  // older than interface 1.3 keeps them all; the next append reuses them).
  void cache_trim(const loom_request_view& view, int32_t num_tokens) { cache_handle_->trim(view, num_tokens); }
  // The physical KV pool (tests compare its contents).
  const KvPool& kv_pool() const { return *kv_pool_; }
  std::span<const int32_t> block_table(uint64_t request_id) const { return cache_handle_->block_table(request_id); }
  void cache_commit(const loom_request_view& view) { cache_handle_->commit(view); }
  // Whether the cache plugin shares a sequence's blocks with a new one (cache interface 1.1).
  bool can_fork() const { return cache_handle_->can_fork(); }
  // Makes child_id hold the parent's computed tokens' blocks. False (state unchanged) when the
  // pool has no room for it; throws on any other refusal. Only when can_fork().
  bool fork(const loom_request_view& parent, uint64_t child_id) { return cache_handle_->fork(parent, child_id); }
  // Tests: waits until the tiers' copy worker has run every queued copy.
  void wait_for_tiers() {
    if (prefix_tiers_) prefix_tiers_->wait_idle();
  }
  // Frees a finished/aborted request's blocks (and tier entries) and removes it from the
  // scheduler; may be called again for the same id (every part ignores ids it no longer holds).
  // Throws the first failure, after trying every part.
  void release(uint64_t request_id);
  // Fills the plugin-side fields of the engine's stats: queues, KV blocks, prefix cache, swaps.
  void read_stats(EngineStats& out) const;
  // True while the tier copy worker still has copies queued or running: they free staging
  // buffers, so the published stats change without an engine step.
  bool tier_copies_pending() const;
  // Creates the [semantic_cache] plugin (if the table is present) with the host's embed callback
  // over `encoder` (semantic_cache interface 1.2; null: the server has no [embedding] model).
  // The encoder is only used during the call.
  void create_semantic_cache(const Config& config, EmbeddingWorker* encoder);
  // The semantic_cache plugin; nullptr when [semantic_cache] is absent or not created yet.
  const LoadedPlugin* semantic_cache_plugin() const { return semantic_cache_.get(); }

  std::unique_ptr<ModelSource> model;  // a GGUF file or a Hugging Face directory
  LlamaHparams hparams;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> chat_template;  // null when the model file has none
  int32_t max_model_len = 0;

 private:
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<PluginHost> host_;
  std::unique_ptr<LoadedPlugin> cache_;
  KvGroups kv_groups_;                         // the cache's block-table groups (its create args point in)
  std::unique_ptr<CacheHandle> cache_handle_;  // over cache_
  std::unique_ptr<KvPool> kv_pool_;
  ForwardPlugins forward_;
  std::unique_ptr<ModelExecutor> executor_;
  std::unique_ptr<LoadedPlugin> scheduler_;
  std::unique_ptr<SchedulerHandle> scheduler_handle_;  // over scheduler_
  std::unique_ptr<KvStaging> kv_staging_;          // over kv_pool_: the tiers' copy ops
  std::string model_fingerprint_;                  // what the tiers' create args point at
  std::unique_ptr<LoadedPlugin> cache_offload_;
  std::vector<std::unique_ptr<LoadedPlugin>> lower_tiers_;  // [cache_offload.next] ..., in order
  std::unique_ptr<SwapCoordinator> swaps_;         // over cache_handle_ and cache_offload_
  std::unique_ptr<PrefixTiers> prefix_tiers_;      // spill/restore over the cache and every tier
  std::unique_ptr<StepScheduler> step_scheduler_;  // over the three handles above
  std::unique_ptr<LoadedPlugin> semantic_cache_;
  std::unique_ptr<BatchBuilder> batch_builder_;
  std::unique_ptr<DraftModelService> draft_models_;  // made with the speculator; its models go first
  StepPlan plan_;
  BuiltBatch batch_;
  Sampler sampler_;
  int32_t max_fit_tokens_ = 0;
  int32_t head_top_k_ = 0;
};

}  // namespace loom
