// The typed configuration of loom-server, read from one TOML file (configs/default.toml is the
// annotated reference of every key). Parsing validates everything the core owns and reports every
// problem at once as `<file>:<line>:<column>: <key.path>: <problem>`; each plugin table is handed
// on as JSON object text for the plugin to validate itself (DESIGN.md §3).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/config/server_limits.hpp"

namespace loom {

struct ModelConfig {
  std::string path;           // absolute; a relative path in the file is relative to the file
  std::string name;           // served model name; default: file name without .gguf/.safetensors
  int32_t max_model_len = 0;  // 0 = from the model
  std::string chat_template;  // a Jinja file (absolute) used instead of the model's own; "" = the model's
  // How chat output is parsed: "auto" reads the formats from the chat template.
  std::string reasoning_parser = "auto";  // auto | none | think (reasoning between the tags below)
  std::string reasoning_start = "<think>";
  std::string reasoning_end = "</think>";
  std::string tool_parser = "auto";  // auto | none | hermes | llama3 | mistral
  bool operator==(const ModelConfig&) const = default;
};

inline constexpr int64_t kDefaultMaxBodyBytes = 8 * 1024 * 1024;

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 = an ephemeral port (tests)
  int32_t http_threads = 2;
  int64_t max_body_bytes = kDefaultMaxBodyBytes;
  std::string api_key;  // empty = no authentication
  // The prefix of every /metrics name: "loom" (loom:...) or "vllm" (vllm:..., what vLLM's
  // dashboards and routers scrape).
  std::string metrics_prefix = "loom";
  ServerLimits limits;  // timeouts, sizes, drain, security switches, request limits
  bool operator==(const ServerConfig&) const = default;
};

struct RuntimeConfig {
  std::string device = "cpu";  // only "cpu" runs today; "cuda"/"cuda:N" are refused (no CUDA code)
  int32_t threads = 0;         // 0 = hardware concurrency
  uint64_t seed = 0;           // base seed for requests that give none
  // Rows sampled greedily, or with a top_k up to this, take the classifier head's own selection
  // of their best outputs (quantization interface 1.5 linear_top_k) rather than a whole logits
  // row; 0 = whole rows always.
  int32_t head_top_k = 64;
  bool operator==(const RuntimeConfig&) const = default;
};

// One `[[slo.class]]` entry: the targets a request of this priority gets when it sets none.
struct SloClassConfig {
  int32_t priority = 0;  // the API's priority (lower runs first)
  int32_t ttft_ms = 0;   // 0 = no target
  int32_t tpot_ms = 0;
  bool operator==(const SloClassConfig&) const = default;
};

// [slo]: request classes, admission control and load shedding (the core's, whatever the
// scheduler). Admission is off by default; with it on, a request is refused with 429 when the
// queue is full or its predicted TTFT exceeds its target by more than ttft_factor.
struct SloConfig {
  std::vector<SloClassConfig> classes;  // by priority; a priority not listed has no targets
  bool admission = false;
  double ttft_factor = 2.0;       // refuse when predicted TTFT > target * factor
  int32_t max_queue_len = 0;      // most requests waiting; 0 = no limit
  int64_t max_queued_tokens = 0;  // most prompt tokens waiting; 0 = no limit
  // Priorities >= this are best effort: they are refused at half of each limit, so they shed first.
  int32_t best_effort_priority = 1;
  int32_t goodput_window_s = 60;   // the sliding window of the goodput gauge
  int32_t calibration_steps = 0;   // synthetic steps timed at start-up to seed the step-time model
  bool operator==(const SloConfig&) const = default;
};

// [embedding]: a sentence encoder (a Hugging Face BERT directory) served at POST /v1/embeddings
// beside the generation model, on its own worker; the embedding semantic cache embeds with it.
struct EmbeddingConfig {
  std::string path;                 // absolute; "" = no embedding model (the route answers 404)
  std::string name;                 // served name; default: the directory name
  int32_t max_batch_tokens = 8192;  // tokens the worker encodes in one batch at most
  bool operator==(const EmbeddingConfig&) const = default;
};

// The server's guards around the semantic cache ([semantic_cache] keys the core reads; not
// part of the plugin's config_json).
struct SemanticCacheGuards {
  // A request is looked up and stored only when it asks (field "semantic_cache": true or header
  // x-loom-semantic-cache: on); false: every eligible request.
  bool require_opt_in = true;
  // Only requests whose answer is reproducible: temperature 0, or a fixed seed.
  bool deterministic_only = true;
  bool operator==(const SemanticCacheGuards&) const = default;
};

// The host's keys of the [speculator] table (core/config/speculator_config.hpp); the rest of the
// table goes to the speculator plugin.
struct SpeculationConfig {
  int32_t num_speculative_tokens = 3;  // k: the most drafts verified per request and step
  bool adaptive = true;                // choose k per request and step from the step-time model
  bool operator==(const SpeculationConfig&) const = default;
};

// One `[<kind>]` table: which plugin implements the kind and that plugin's own settings.
struct PluginTable {
  std::string plugin;              // name: loads libloom-<kind>-<plugin>.so
  std::string path;                // optional explicit .so (absolute); empty = search plugin dirs
  std::string config_json = "{}";  // every other key of the table, as compact JSON object text
  bool operator==(const PluginTable&) const = default;
};

struct Config {
  std::string source_path;  // the file it came from, as given (used in messages)
  ModelConfig model;
  ServerConfig server;
  RuntimeConfig runtime;
  std::vector<std::string> plugin_dirs;  // [plugins] dirs, absolute, searched in order
  std::string log_level = "info";        // trace, debug, info, warn, error, off
  SloConfig slo;
  PluginTable attention{"naive"};
  PluginTable quantization{"auto"};  // the plugin that claims the file's weight types
  PluginTable scheduler{"fcfs"};
  PluginTable cache{"contiguous"};
  // [cache] kv_dtype: the KV pool's element type, "f32", "f16", "bf16", "int8" or "fp8_e4m3". The
  // core reads it (pool, cache and attention create args); it is not part of cache.config_json.
  std::string kv_dtype = "f32";
  // [cache] memory_utilization (core key): when [cache] sets neither kv_memory nor num_blocks,
  // loom-server sizes the pool as this fraction of the machine's available memory minus the
  // model file, capped at what max_num_seqs sequences of max_model_len tokens can use
  // (core/server/kv_memory_budget.hpp). In-process users (tests) get the plugin's own default.
  double memory_utilization = 0.9;
  std::optional<PluginTable> cache_offload;   // absent table = kind off
  // [cache_offload] core keys: spill = false keeps the tier for preemption swaps only (evicted
  // prefix blocks are dropped); staging_blocks caps the host buffers of copies in flight (0:
  // the pool's block count); [cache_offload.next] (and its .next ...) are the tiers below, in
  // order: pool -> cache_offload -> next -> ...
  bool cache_offload_spill = true;
  int64_t cache_offload_staging_blocks = 0;
  std::vector<PluginTable> cache_offload_next;
  std::optional<PluginTable> semantic_cache;  // absent table = kind off
  SemanticCacheGuards semantic_guards;        // [semantic_cache] opt_in, deterministic_only
  EmbeddingConfig embedding;
  std::optional<PluginTable> speculator;      // absent table = no speculative decoding
  SpeculationConfig speculation;              // [speculator] num_speculative_tokens, adaptive
  bool operator==(const Config&) const = default;
};

// Plugin-table keys set in code (command-line flags, the KV memory budget): `json_value` is JSON
// text ("64", "true", "\"8GiB\""); nullopt removes the key. The plugin validates the result.
void set_plugin_key(PluginTable& table, const std::string& key, std::optional<std::string> json_value);
bool has_plugin_key(const PluginTable& table, const std::string& key);
// `over` layered on `base`: over's keys added to base's when both name the same plugin, else
// `over` alone (another plugin's keys would be refused as unknown).
PluginTable merge_plugin_tables(const PluginTable& base, const PluginTable& over);

// Reads and validates a config file. Throws loom::Error naming the file when it cannot be read,
// and with one line per problem when it is invalid.
Config load_config(const std::string& path);
// The same, on top of `base`: a key the file does not set keeps base's value; a plugin table that
// names base's plugin adds its keys to base's, one that names another plugin replaces them.
Config load_config(const std::string& path, const Config& base);

// Same, from text; `source_path` names the file in messages and is the base of relative paths
// (empty: "<config>" and the working directory).
Config parse_config(std::string_view toml_text, const std::string& source_path);
Config parse_config(std::string_view toml_text, const std::string& source_path, const Config& base);

// What loom-server runs with when no file says otherwise: the values configs/default.toml shows,
// compiled in, without a model (a unit test keeps the two equal). Config{} is the bare base of
// the library (naive / none / fcfs / contiguous, no plugin keys), which in-process tests build on.
Config builtin_config();

// Checks a Config built or changed in code (after CLI overrides) with the same rules as the
// parser, and that a model is set. Throws loom::Error with one line per problem.
void check_config(const Config& config);

// The effective config as TOML: parse_config(to_toml(c), c.source_path) == c. It includes
// server.api_key, so do not log it.
std::string to_toml(const Config& config);

// The served name for a model path: the file or directory name without a .gguf/.safetensors/.bin
// extension ("/m/stories260K.gguf" -> "stories260K", "/m/Qwen2.5-0.5B/" -> "Qwen2.5-0.5B").
std::string model_name_from_path(std::string_view path);

}  // namespace loom
