// Plugin tables changed in code: one key set or removed, or one table layered on another. The
// table's keys stay JSON object text (the plugin's to validate), so this only edits that text.
#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/config/config.hpp"

namespace loom {
namespace {

nlohmann::json object_of(const PluginTable& table) {
  auto json = nlohmann::json::parse(table.config_json, nullptr, /*allow_exceptions=*/false);
  if (!json.is_object()) {
    throw Error("plugin '" + table.plugin + "': config is not a JSON object: " + table.config_json);
  }
  return json;
}

}  // namespace

void set_plugin_key(PluginTable& table, const std::string& key, std::optional<std::string> json_value) {
  nlohmann::json json = object_of(table);
  if (json_value) {
    auto value = nlohmann::json::parse(*json_value, nullptr, /*allow_exceptions=*/false);
    if (value.is_discarded()) throw Error("plugin key " + key + ": not JSON: " + *json_value);
    json[key] = std::move(value);
  } else {
    json.erase(key);
  }
  table.config_json = json.dump();
}

bool has_plugin_key(const PluginTable& table, const std::string& key) { return object_of(table).contains(key); }

PluginTable merge_plugin_tables(const PluginTable& base, const PluginTable& over) {
  if (base.plugin != over.plugin) return over;
  nlohmann::json json = object_of(base);
  const nlohmann::json added = object_of(over);  // named: items() would outlive a temporary
  for (const auto& [key, value] : added.items()) json[key] = value;
  PluginTable out = over;
  out.config_json = json.dump();
  return out;
}

}  // namespace loom
