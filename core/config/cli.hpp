// loom-server's command line: the model, an optional config file, and overrides of the settings
// people set most, spelled as `vllm serve` and llama-server spell them (see cli_usage()).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"

namespace loom {

struct CliOptions {
  std::string config_path;                // --config; "" = built-in defaults only
  std::optional<std::string> model_path;  // MODEL, -m/--model: absolute (relative to the cwd)
  std::optional<std::string> served_model_name;         // [model] name
  std::optional<int32_t> max_model_len;                 // -c: [model] max_model_len
  std::optional<std::string> chat_template;             // [model] chat_template, absolute
  std::optional<std::string> embedding_model;           // [embedding] path, absolute
  std::optional<std::string> host;                      // [server] host
  std::optional<uint16_t> port;                         // [server] port
  std::optional<std::string> api_key;                   // [server] api_key
  std::optional<std::string> metrics_prefix;            // [server] metrics_prefix
  std::optional<int32_t> threads;                       // -t: [runtime] threads
  std::optional<std::string> log_level;                 // [logging] level
  std::optional<std::string> quantization;              // [quantization] plugin
  std::optional<int32_t> max_num_seqs;                  // -np: [scheduler] max_num_seqs
  std::optional<int32_t> max_num_batched_tokens;        // [scheduler] max_num_batched_tokens
  std::optional<bool> enable_prefix_caching;            // [cache] enable_prefix_caching
  std::optional<int64_t> kv_memory;                     // --kv-cache-memory: [cache] kv_memory
  std::optional<std::string> kv_dtype;                  // --kv-cache-dtype: [cache] kv_dtype
  std::optional<double> memory_utilization;             // [cache] memory_utilization
  std::optional<std::string> speculative_config;        // vLLM's JSON: the [speculator] table
  bool print_config = false;
  bool help = false;
  bool version = false;
  bool operator==(const CliOptions&) const = default;
};

// Parses argv (argv[0] is the program) with CLI11 in the shared style (core/common/
// command_line.hpp). Validates each value with the config's rules. Throws loom::Error with a
// one-line message on bad arguments; --help and --version only set their fields.
CliOptions parse_cli(int argc, char** argv);

// The --help text.
std::string cli_usage();

// Writes the options that were given into the config. A new model renames the served model
// when its name was derived from the old path. Flags of plugin keys are written into that
// plugin's table, whose plugin then validates them (and refuses a key it does not have).
void apply_overrides(Config& config, const CliOptions& options);

// builtin_config(), then --config's file on top, then the flags, then check_config: what
// loom-server runs (before the KV memory budget, which needs the model).
Config load_effective_config(const CliOptions& options);

}  // namespace loom
