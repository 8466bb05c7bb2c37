// What the HTTP side sees of the engine: submit a request with a sink for its output, abort it,
// read stats. Every call is thread-safe and never waits for a step; the sink is called on the
// engine thread and must not block (the server posts to its own executor from it).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/common/histogram.hpp"
#include "core/engine/logits_processors.hpp"
#include "core/engine/semantic_cache_snapshot.hpp"
#include "core/engine/slo_snapshot.hpp"
#include "core/engine/sampler.hpp"

namespace loom {

class ChatTemplate;
class Tokenizer;
struct Grammar;
class EmbeddingWorker;
class SemanticCacheClient;

struct SamplingParams {
  float temperature = 1.0f;       // 0 = greedy
  float top_p = 1.0f;             // nucleus mass kept, (0, 1]
  int32_t top_k = 0;              // 0 = off
  float min_p = 0.0f;             // keep tokens with p >= min_p * p_max; 0 = off
  std::optional<uint64_t> seed;   // same seed -> same text; unset = from the engine's generator
  int32_t max_tokens = 16;        // new tokens at most, >= 1
  bool ignore_eos = false;        // keep going past EOS until max_tokens
  std::vector<std::string> stop;  // generation ends at the first of these strings to appear
  bool include_stop_str_in_output = false;  // true: that stop string ends the output (vLLM's field)
  // Set: every sampled token comes with its log-probability and the `*logprobs` most likely
  // alternatives (0..kMaxLogprobs), from the raw logits (before temperature and filters).
  std::optional<int32_t> logprobs;
  // Set: every token is chosen among those the grammar allows (core/engine/constraint_state.hpp).
  std::shared_ptr<const Grammar> grammar;
  // Penalties, logit_bias, min_tokens and stop_token_ids (a sampled stop token ends the choice
  // with kStop, its text not returned, like EOS; ignore_eos does not affect them).
  LogitsProcessing processing;
  // Set: the prompt's tokens 1..P-1 get their logprobs (and this many alternatives) from a
  // teacher-forced pass over the prompt, delivered with the first output. The request then
  // never reads the prefix cache (its prompt rows must be computed).
  std::optional<int32_t> prompt_logprobs;
  // False: control tokens' text is kept in the output (vLLM's skip_special_tokens); the chat
  // route clears it when a tool-call format's markers are control tokens ([TOOL_CALLS]).
  bool skip_special_tokens = true;
  // False: this request is never speculated on, though a [speculator] is configured.
  bool speculative_decoding = true;
};

inline constexpr int32_t kMaxLogprobs = 20;
inline constexpr int32_t kMaxChoices = 128;

enum class FinishReason { kStop, kLength, kAbort, kError };

const char* finish_reason_name(FinishReason r);  // "stop", "length", "abort", "error"

// One batch of output for one choice of a request, delivered in order per choice.
struct GenerationOutput {
  int32_t index = 0;               // the choice, 0..n-1
  std::vector<int32_t> token_ids;  // tokens sampled since the previous output
  std::vector<RowLogprobs> logprobs;  // one per token_ids entry when sampling.logprobs is set
  // With sampling.prompt_logprobs, on the first output only: [P - 1], entry i for prompt token
  // i + 1 (the first prompt token has none).
  std::vector<RowLogprobs> prompt_logprobs;
  std::string text;                // their text: whole UTF-8 characters only; text that could still
                                   // begin a stop string is held back until it cannot
  std::optional<FinishReason> finish;  // set on the last output of the request
  std::string error;                   // when finish == kError
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;       // total so far, of this choice
};

using OutputSink = std::function<void(GenerationOutput&&)>;

// A request's service-level targets in milliseconds; 0 = none. Unset targets take the [slo]
// class defaults of the request's priority at submit.
struct SloTargets {
  int32_t ttft_ms = 0;  // time to first token, from arrival
  int32_t tpot_ms = 0;  // time per output token after the first
  bool operator==(const SloTargets&) const = default;
};

struct GenerateRequest {
  std::vector<int32_t> prompt;  // token ids, BOS included when wanted
  SamplingParams sampling;
  // As vLLM: lower runs first; 0 by default. (Schedulers see -priority in loom_request_view,
  // whose priority is "larger = more urgent".)
  int32_t priority = 0;
  SloTargets slo;
  uint64_t tenant_id = 0;  // fair-share key (hash of x-gateway-inference-fairness-id or user); 0 = none
  // Choices, 1..kMaxChoices. With a seed s, choice i samples with seed s + i, so its text equals
  // an n = 1 request's with that seed. The prompt is computed once and its KV shared (when the
  // cache plugin can fork); every choice ends with its own final output.
  int32_t n = 1;
  uint64_t cache_salt = 0;  // nonzero: prefix-cache entries are shared only under the same salt
  OutputSink sink;
};

// Speculative decoding's counters (vLLM's spec_decode_* names); all 0 without a [speculator].
struct SpecDecodeStats {
  bool enabled = false;
  int64_t num_drafts = 0;           // verifications: a request's drafts checked in one step
  int64_t num_draft_tokens = 0;     // draft tokens verified
  int64_t num_accepted_tokens = 0;  // of them, accepted
  std::vector<int64_t> accepted_per_pos;  // [num_speculative_tokens] accepted at draft position i
  int64_t num_steps = 0;            // steps with a request speculation could run for
  int64_t num_steps_adaptive_off = 0;  // of them, steps where adaptation chose no drafts at all
  double proposal_per_step_us = 0.0;   // the proposal cost model (core/engine/proposal_cost_model.hpp)
  double proposal_per_request_draft_us = 0.0;
  double proposal_per_catch_up_token_us = 0.0;
};

// One cache_offload tier's part in prefix spill and restore (core/engine/offload_tier.hpp).
struct TierStats {
  std::string name;
  int64_t hits = 0, misses = 0;           // restore lookups of one block that found / missed it
  int64_t blocks_in = 0, blocks_out = 0;  // blocks written into the tier / read back out
  int64_t bytes_in = 0, bytes_out = 0;
  int64_t capacity_bytes = 0, used_bytes = 0, entries = 0;
  HistogramSnapshot save_seconds;         // one block's copy into the tier
  HistogramSnapshot load_seconds;         // one block's copy out of it
};

// Restore-vs-recompute decisions for pool misses a tier held, in blocks (prefix_tiers.hpp).
struct TierDecisions {
  int64_t restored = 0;               // copied back instead of computed
  int64_t recompute_no_staging = 0;   // fetches cut short: the staging buffers were all in use
  int64_t recompute_prefix_lost = 0;  // the pool lost the blocks before them while fetching
  int64_t recompute_load_failed = 0;  // the tier failed to read it back
  int64_t recompute_not_needed = 0;   // fetched, but the pool or the chunk had them already
  int64_t spill_dropped = 0;          // evicted blocks not spilled: no staging buffer free
  int64_t spilled = 0;                // evicted blocks staged for the tiers
};

struct EngineStats {
  int32_t num_waiting = 0;
  int32_t num_running = 0;
  int32_t kv_total_blocks = 0;
  int32_t kv_used_blocks = 0;
  int32_t kv_free_blocks = 0;
  int32_t kv_num_seqs = 0;
  int64_t num_preemptions = 0;
  int64_t requests_finished = 0;
  int64_t prompt_tokens_total = 0;
  int64_t generation_tokens_total = 0;
  // Requests finished normally, by reason (requests_finished is their sum).
  int64_t requests_finished_stop = 0;
  int64_t requests_finished_length = 0;
  int32_t kv_cached_blocks = 0;        // unreferenced blocks kept for prefix reuse
  int64_t prefix_cache_queries = 0;    // cumulative prompt tokens looked up in the prefix cache
  int64_t prefix_cache_hits = 0;       // cumulative tokens of those found there
  // Cumulative looked-up tokens that missed, by reason (see loom/cache.h; 0 for 1.0 caches).
  int64_t prefix_cache_miss_partial_block = 0;
  int64_t prefix_cache_miss_no_match = 0;
  int64_t prefix_cache_miss_evicted = 0;
  int64_t prefix_cache_miss_salt_mismatch = 0;
  int64_t kv_swapped_out_blocks = 0;   // blocks saved to the cache_offload tier on preemption
  int64_t kv_swapped_in_blocks = 0;    // blocks restored from it instead of recomputed
  // Prefix spill and restore through the cache_offload tiers, pool -> first tier -> next ...
  std::vector<TierStats> kv_tiers;
  TierDecisions kv_tier_decisions;
  int32_t kv_tier_staging_in_use = 0;  // staging buffers holding a block in flight or staged
  int32_t kv_tier_fetching = 0;        // requests held back until their fetch from a tier ends
  // Of the prefix-cache misses above, the tokens a tier held and the host restored: moved out of
  // the reason the cache gave them (evicted, no_match or partial_block), so the reasons still sum
  // to the misses.
  int64_t prefix_cache_miss_lower_tier = 0;
  // Request-level histograms (seconds unless tokens); see core/engine/request_metrics.hpp.
  HistogramSnapshot time_to_first_token;
  HistogramSnapshot inter_token_latency;
  HistogramSnapshot time_per_output_token;
  HistogramSnapshot e2e_request_latency;
  HistogramSnapshot request_queue_time;
  HistogramSnapshot request_prefill_time;
  HistogramSnapshot request_decode_time;
  HistogramSnapshot request_prompt_tokens;
  HistogramSnapshot request_generation_tokens;
  HistogramSnapshot iteration_tokens;   // tokens computed per engine step
  // Engine steps that ran a batch, their wall time (schedule to the last output), and of those
  // the steps that sampled under a grammar with the time its masks and state updates took: the
  // grammar's share of a step is grammar_seconds / the steps' time.
  int64_t engine_steps = 0;
  double engine_step_seconds = 0.0;
  int64_t grammar_steps = 0;
  double grammar_step_seconds = 0.0;  // wall time of the grammar steps
  double grammar_seconds = 0.0;
  SloSnapshot slo;                      // SLO attainment, refusals, goodput, step-time model
  SemanticCacheSnapshot semantic_cache;  // hits, misses, stores ... of [semantic_cache]
  SpecDecodeStats spec_decode;
};

struct ModelInfo {
  std::string name;           // served model name (the `model` field)
  int32_t max_model_len = 0;  // prompt + generated tokens at most
  int32_t vocab_size = 0;
  int64_t created = 0;        // unix seconds at load
};

class EngineInterface {
 public:
  virtual ~EngineInterface() = default;
  // Queues a request and returns its id (one id for all its choices). Throws loom::Error (a message naming the field) when
  // it can never run: empty prompt, prompt + max_tokens beyond max_model_len, token ids outside
  // the vocabulary, or too big for the whole KV pool.
  virtual uint64_t submit(GenerateRequest request) = 0;
  // Cancels a request (every choice) wherever it is (queued or running); its blocks are freed at
  // the next step and its sink gets one last output with finish = kAbort per live choice.
  // Unknown ids are ignored.
  virtual void abort(uint64_t request_id) = 0;
  virtual EngineStats stats() const = 0;
  virtual const ModelInfo& model_info() const = 0;
  virtual const Tokenizer& tokenizer() const = 0;
  // The model's own chat template; nullptr when it has none (the fallback format is used).
  virtual const ChatTemplate* chat_template() const { return nullptr; }
  // The [embedding] model's worker (POST /v1/embeddings); nullptr when none is configured.
  virtual EmbeddingWorker* embeddings() const { return nullptr; }
  // The [semantic_cache] plugin with the server's guards; nullptr when the kind is off.
  virtual SemanticCacheClient* semantic_cache() const { return nullptr; }
};

}  // namespace loom
