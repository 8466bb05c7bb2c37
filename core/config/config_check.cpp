// check_config: the parser's value rules applied to a Config that code has built or changed
// (command-line overrides), plus the one rule a file alone may leave open: a model must be set.
#include <limits>
#include <nlohmann/json.hpp>

#include "core/config/config.hpp"
#include "core/config/config_rules.hpp"
#include "core/config/server_limits_config.hpp"
#include "core/config/slo_config.hpp"
#include "core/config/embedding_config.hpp"
#include "core/config/speculator_config.hpp"
#include "core/config/toml_reader.hpp"

namespace loom {
namespace {

using config_detail::Problems;
using config_detail::SourcePos;

void check_range(Problems& problems, const char* key, int64_t value, int64_t lo, int64_t hi) {
  if (value < lo || value > hi) {
    problems.add(SourcePos{}, key, config_rules::range_problem(value, lo, hi));
  }
}

void check_plugin(Problems& problems, const std::string& kind, const PluginTable& table) {
  if (auto problem = config_rules::check_plugin_name(table.plugin)) {
    problems.add(SourcePos{}, kind + ".plugin", *problem);
  }
  const auto json = nlohmann::json::parse(table.config_json, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    problems.add(
        SourcePos{}, kind,
        "plugin config must be a JSON object, got " + config_rules::quoted(table.config_json));
  }
}

}  // namespace

void check_config(const Config& config) {
  Problems problems(config.source_path.empty() ? "<config>" : config.source_path);
  if (config.model.path.empty()) {
    problems.add(SourcePos{}, "model.path", "required: give MODEL (or -m/--model) or set [model] path");
  }
  check_range(problems, "model.max_model_len", config.model.max_model_len, 0,
              std::numeric_limits<int32_t>::max());
  if (config.server.host.empty()) problems.add(SourcePos{}, "server.host", "must not be empty");
  check_range(problems, "server.http_threads", config.server.http_threads,
              config_rules::kMinHttpThreads, config_rules::kMaxHttpThreads);
  check_range(problems, "server.max_body_bytes", config.server.max_body_bytes,
              config_rules::kMinBodyBytes, std::numeric_limits<int64_t>::max());
  if (auto problem = config_rules::check_metrics_prefix(config.server.metrics_prefix)) {
    problems.add(SourcePos{}, "server.metrics_prefix", *problem);
  }
  config_detail::check_server_limits(problems, config.server.limits);
  if (auto problem = config_rules::check_device(config.runtime.device)) {
    problems.add(SourcePos{}, "runtime.device", *problem);
  }
  check_range(problems, "runtime.threads", config.runtime.threads, 0, config_rules::kMaxRuntimeThreads);
  check_range(problems, "runtime.head_top_k", config.runtime.head_top_k, 0, config_rules::kMaxHeadTopK);
  // The file form of the seed is a TOML integer, so a seed above INT64_MAX could not be written.
  if (config.runtime.seed > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) {
    problems.add(SourcePos{}, "runtime.seed",
                 "must be <= 9223372036854775807, got " + std::to_string(config.runtime.seed));
  }
  if (auto problem = config_rules::check_log_level(config.log_level)) {
    problems.add(SourcePos{}, "logging.level", *problem);
  }
  config_detail::check_slo(problems, config.slo);
  config_detail::check_embedding(problems, config.embedding);
  check_plugin(problems, "attention", config.attention);
  check_plugin(problems, "quantization", config.quantization);
  check_plugin(problems, "scheduler", config.scheduler);
  check_plugin(problems, "cache", config.cache);
  if (auto problem = config_rules::check_kv_dtype(config.kv_dtype)) {
    problems.add(SourcePos{}, "cache.kv_dtype", *problem);
  }
  if (auto problem = config_rules::check_memory_utilization(config.memory_utilization)) {
    problems.add(SourcePos{}, "cache.memory_utilization", *problem);
  }
  if (config.cache_offload) check_plugin(problems, "cache_offload", *config.cache_offload);
  std::string next_kind = "cache_offload";
  for (const PluginTable& next : config.cache_offload_next) check_plugin(problems, next_kind += ".next", next);
  if (!config.cache_offload && !config.cache_offload_next.empty())
    problems.add(SourcePos{}, "cache_offload.next", "a tier below needs a [cache_offload] tier above it");
  if (config.semantic_cache) check_plugin(problems, "semantic_cache", *config.semantic_cache);
  if (config.speculator) check_plugin(problems, "speculator", *config.speculator);
  config_detail::check_speculation(problems, config.speculation);
  problems.throw_if_any();
}

}  // namespace loom
