// to_toml: the effective config in the layout of configs/default.toml, with every value spelled
// out (defaults included) so `loom-server --print-config` shows exactly what runs.
#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/config/server_limits_config.hpp"
#include "core/config/slo_config.hpp"
#include "core/config/embedding_config.hpp"
#include "core/config/speculator_config.hpp"
#include "core/config/toml_json.hpp"

namespace loom {
namespace {

using config_detail::toml_inline_value;
using config_detail::toml_key;
using config_detail::toml_string;

void line(std::string& out, std::string_view key, const std::string& value) {
  out += std::string(key) + " = " + value + "\n";
}

void plugin_section(std::string& out, const std::string& kind, const PluginTable& table) {
  out += "\n[" + kind + "]\n";
  line(out, "plugin", toml_string(table.plugin));
  if (!table.path.empty()) line(out, "path", toml_string(table.path));
  const auto json = nlohmann::json::parse(table.config_json, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    throw Error("to_toml: [" + kind + "] config_json is not a JSON object: " + table.config_json);
  }
  // Nested tables are written inline so the whole plugin table stays under one header.
  for (auto it = json.begin(); it != json.end(); ++it) {
    line(out, toml_key(it.key()), toml_inline_value(it.value()));
  }
}

}  // namespace

std::string to_toml(const Config& c) {
  std::string out;
  out += "[model]\n";
  // An empty path or name is "not set" (the parser rejects empty strings), so it is left out.
  if (!c.model.path.empty()) line(out, "path", toml_string(c.model.path));
  if (!c.model.name.empty()) line(out, "name", toml_string(c.model.name));
  line(out, "max_model_len", std::to_string(c.model.max_model_len));
  if (!c.model.chat_template.empty()) line(out, "chat_template", toml_string(c.model.chat_template));
  const ModelConfig defaults;
  if (c.model.reasoning_parser != defaults.reasoning_parser) line(out, "reasoning_parser", toml_string(c.model.reasoning_parser));
  if (c.model.reasoning_start != defaults.reasoning_start) line(out, "reasoning_start", toml_string(c.model.reasoning_start));
  if (c.model.reasoning_end != defaults.reasoning_end) line(out, "reasoning_end", toml_string(c.model.reasoning_end));
  if (c.model.tool_parser != defaults.tool_parser) line(out, "tool_parser", toml_string(c.model.tool_parser));

  out += "\n[server]\n";
  line(out, "host", toml_string(c.server.host));
  line(out, "port", std::to_string(c.server.port));
  line(out, "http_threads", std::to_string(c.server.http_threads));
  line(out, "max_body_bytes", std::to_string(c.server.max_body_bytes));
  line(out, "api_key", toml_string(c.server.api_key));
  line(out, "metrics_prefix", toml_string(c.server.metrics_prefix));
  out += config_detail::server_limits_toml(c.server.limits);

  out += "\n[runtime]\n";
  line(out, "device", toml_string(c.runtime.device));
  line(out, "threads", std::to_string(c.runtime.threads));
  line(out, "seed", std::to_string(c.runtime.seed));
  line(out, "head_top_k", std::to_string(c.runtime.head_top_k));

  out += "\n[plugins]\n";
  std::string dirs = "[";
  for (size_t i = 0; i < c.plugin_dirs.size(); ++i) {
    dirs += (i == 0 ? "" : ", ") + toml_string(c.plugin_dirs[i]);
  }
  line(out, "dirs", dirs + "]");

  out += "\n[logging]\n";
  line(out, "level", toml_string(c.log_level));
  out += config_detail::slo_toml(c.slo);

  plugin_section(out, "attention", c.attention);
  plugin_section(out, "quantization", c.quantization);
  plugin_section(out, "scheduler", c.scheduler);
  plugin_section(out, "cache", c.cache);
  line(out, "kv_dtype", toml_string(c.kv_dtype));
  // The fraction sizes the pool only when no fixed size is set (the parser refuses both).
  if (!has_plugin_key(c.cache, "kv_memory") && !has_plugin_key(c.cache, "num_blocks"))
    line(out, "memory_utilization", toml_inline_value(nlohmann::json(c.memory_utilization)));
  if (c.cache_offload) {
    plugin_section(out, "cache_offload", *c.cache_offload);
    line(out, "spill", c.cache_offload_spill ? "true" : "false");
    line(out, "staging_blocks", std::to_string(c.cache_offload_staging_blocks));
    std::string kind = "cache_offload";
    for (const PluginTable& next : c.cache_offload_next) plugin_section(out, kind += ".next", next);
  }
  if (c.semantic_cache) {
    plugin_section(out, "semantic_cache", *c.semantic_cache);
    out += config_detail::semantic_guards_toml(c.semantic_guards);
  }
  out += config_detail::embedding_toml(c.embedding);
  if (c.speculator) {
    plugin_section(out, "speculator", *c.speculator);
    out += config_detail::speculation_lines(c.speculation);
  }
  return out;
}

}  // namespace loom
