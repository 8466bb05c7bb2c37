// Everything the engine thread drives, assembled from a config in dependency order:
//   model file -> tokenizer -> thread pool -> plugin host -> cache (asks for the pool) -> KV pool
//   -> attention + quantization -> model executor -> scheduler -> (cache_offload, semantic_cache)
// and the typed calls the engine makes into the plugins. Members are destroyed in reverse, so
// every plugin instance is gone before the libraries and the thread pool.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <random>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/config/config.hpp"
#include "core/engine/kv_swap.hpp"
#include "core/engine/request_state.hpp"
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

// One step's plan as the engine uses it.
struct ScheduleResult {
  std::vector<loom_scheduled_request> scheduled;
  std::vector<uint64_t> preempted;
  std::vector<std::pair<uint64_t, std::string>> rejected;  // id, reason
};

// One scheduled sequence of the step being executed.
struct StepSequence {
  RequestState* request;
  int32_t num_new_tokens;
};

struct RuntimeUsage {
  int32_t num_waiting = 0;
  int32_t num_running = 0;
  int64_t num_preemptions = 0;
  int32_t kv_total_blocks = 0;
  int32_t kv_used_blocks = 0;
  int32_t kv_free_blocks = 0;
  int32_t kv_num_seqs = 0;
  int32_t kv_cached_blocks = 0;
  int64_t prefix_hit_tokens = 0;    // cumulative, as the cache plugin counts them
  int64_t prefix_query_tokens = 0;
  // Cache 1.1: looked-up tokens that missed, by reason (a 1.0 plugin leaves them 0).
  int64_t prefix_miss_partial_block_tokens = 0;
  int64_t prefix_miss_no_match_tokens = 0;
  int64_t prefix_miss_evicted_tokens = 0;
  int64_t prefix_miss_salt_mismatch_tokens = 0;
  // KV blocks moved to and from the cache_offload tier by preemption (0 without one).
  int64_t kv_swapped_out_blocks = 0;
  int64_t kv_swapped_in_blocks = 0;
};

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

class RuntimeStack {
 public:
  explicit RuntimeStack(const Config& config);
  ~RuntimeStack();

  // The longest request (prompt + max_tokens) the KV pool can ever hold, found once at load by
  // asking the cache plugin; used to refuse requests synchronously on HTTP threads.
  bool kv_fits(int32_t max_total_tokens, std::string& reason) const;

  void scheduler_add(const loom_request_view& view);
  using RequestLookup = std::function<const RequestState*(uint64_t)>;
  ScheduleResult schedule(const RequestLookup& lookup, int64_t now_us);
  // Runs the model on the scheduled tokens; logits get one row per sequence that completes its
  // tokens this step (in `seqs` order).
  void execute(std::span<const StepSequence> seqs, std::vector<float>& logits);
  int32_t sample(std::span<const float> logits, const SamplingParams& params, std::mt19937_64& rng);
  void cache_commit(const loom_request_view& view);
  // Whether the cache plugin shares a sequence's blocks with a new one (interface 1.1 fork and
  // take_block_copies, checked against its vtable's struct_size); 1.0 plugins cannot.
  bool can_fork() const { return can_fork_; }
  // Makes child_id hold the parent's computed tokens' blocks. False (state unchanged) when the
  // pool has no room for it; throws on any other refusal. Only when can_fork().
  bool fork(const loom_request_view& parent, uint64_t child_id);
  // Performs the copy-on-write block copies the cache queued; call before every forward pass.
  void apply_block_copies();
  // Frees a finished/aborted request's blocks and removes it from the scheduler.
  void release(uint64_t request_id);
  // Preemption by swap (only with a [cache_offload] table, else both return 0). swap_out saves a
  // just-preempted request's first num_computed_tokens tokens from the blocks it held at its last
  // execute(); call it before execute() reuses them. swap_in restores, for a scheduled request
  // whose num_computed_tokens already includes the step's cached prefix, what it can of the
  // step's chunk; the caller advances num_computed_tokens by the result and computes the rest.
  int32_t swap_out(uint64_t request_id, int32_t num_computed_tokens);
  int32_t swap_in(const RequestState& req, int32_t num_new_tokens);
  RuntimeUsage usage() const;

  std::unique_ptr<ModelSource> model;  // a GGUF file or a Hugging Face directory
  LlamaHparams hparams;
  std::unique_ptr<Tokenizer> tokenizer;
  std::unique_ptr<ChatTemplate> chat_template;  // null when the model file has none
  int32_t max_model_len = 0;

 private:
  std::unique_ptr<ThreadPool> threads_;
  std::unique_ptr<PluginHost> host_;
  std::unique_ptr<LoadedPlugin> cache_;
  std::unique_ptr<KvPool> kv_pool_;
  ForwardPlugins forward_;
  std::unique_ptr<ModelExecutor> executor_;
  std::unique_ptr<LoadedPlugin> scheduler_;
  std::unique_ptr<LoadedPlugin> cache_offload_;
  std::unique_ptr<KvSwapper> swapper_;  // over cache_offload_: destroyed before it
  std::unordered_map<uint64_t, std::vector<int32_t>> last_tables_;  // id -> blocks at its last execute()
  int32_t block_size_ = 0;
  std::unique_ptr<LoadedPlugin> semantic_cache_;
  std::unique_ptr<BatchBuilder> batch_builder_;
  BuiltBatch batch_;
  Sampler sampler_;
  int32_t max_fit_tokens_ = 0;
  bool can_fork_ = false;
  // Scratch for schedule().
  std::vector<loom_scheduled_request> sched_buf_;
  std::vector<uint64_t> preempt_buf_;
  std::vector<uint64_t> reject_buf_;
  std::vector<SeqSchedule> seq_buf_;
};

}  // namespace loom
