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

namespace loom {

struct ModelConfig {
  std::string path;           // absolute; a relative path in the file is relative to the file
  std::string name;           // served model name; default: file name without .gguf/.safetensors
  int32_t max_model_len = 0;  // 0 = from the model
  bool operator==(const ModelConfig&) const = default;
};

inline constexpr int64_t kDefaultMaxBodyBytes = 8 * 1024 * 1024;

struct ServerConfig {
  std::string host = "127.0.0.1";
  uint16_t port = 8080;  // 0 = an ephemeral port (tests)
  int32_t http_threads = 2;
  int64_t max_body_bytes = kDefaultMaxBodyBytes;
  std::string api_key;  // empty = no authentication
  bool operator==(const ServerConfig&) const = default;
};

struct RuntimeConfig {
  std::string device = "cpu";  // "cpu", "cuda" or "cuda:N"
  int32_t threads = 0;         // 0 = hardware concurrency
  uint64_t seed = 0;           // base seed for requests that give none
  bool operator==(const RuntimeConfig&) const = default;
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
  PluginTable attention{"naive"};
  PluginTable quantization{"none"};
  PluginTable scheduler{"fcfs"};
  PluginTable cache{"contiguous"};
  // [cache] kv_dtype: the KV pool's element type, "f32", "f16", "bf16", "int8" or "fp8_e4m3". The
  // core reads it (pool, cache and attention create args); it is not part of cache.config_json.
  std::string kv_dtype = "f32";
  std::optional<PluginTable> cache_offload;   // absent table = kind off
  std::optional<PluginTable> semantic_cache;  // absent table = kind off
  bool operator==(const Config&) const = default;
};

// Reads and validates a config file. Throws loom::Error naming the file when it cannot be read,
// and with one line per problem when it is invalid.
Config load_config(const std::string& path);

// Same, from text; `source_path` names the file in messages and is the base of relative paths
// (empty: "<config>" and the working directory).
Config parse_config(std::string_view toml_text, const std::string& source_path);

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
