// parse_config / load_config: TOML text -> Config, reporting every problem at once.
#include <algorithm>
#include <array>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <initializer_list>
#include <limits>
#include <sstream>

#include "core/common/error.hpp"
#include "core/config/config.hpp"
#include "core/config/config_rules.hpp"
#include "core/config/server_limits_config.hpp"
#include "core/config/slo_config.hpp"
#include "core/config/embedding_config.hpp"
#include "core/config/speculator_config.hpp"
#include "core/config/toml_json.hpp"
#include "core/config/toml_reader.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;
using config_detail::pos_of;
using config_detail::Problems;
using config_detail::TableReader;
using config_detail::type_name;

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();
constexpr int64_t kInt64Max = std::numeric_limits<int64_t>::max();

constexpr std::array<std::string_view, 14> kTopLevelTables = {
    "model",        "server",    "runtime", "plugins",       "logging",        "slo",         "attention",
    "quantization", "scheduler", "cache",   "cache_offload", "semantic_cache", "embedding", "speculator"};

// Paths in a config are relative to the config file, so a config works from any directory;
// they are stored absolute so the effective config does too.
std::string resolve_path(const std::string& path, const fs::path& base_dir) {
  const fs::path p(path);
  return (p.is_absolute() ? p : fs::absolute(base_dir / p)).lexically_normal().string();
}

void read_model(TableReader& t, const fs::path& base_dir, ModelConfig& model) {
  if (auto path = t.string("path", false)) {
    // A new path renames the served model when base's name was only derived from its path.
    if (model.name == model_name_from_path(model.path)) model.name.clear();
    model.path = resolve_path(*path, base_dir);
  }
  if (auto name = t.string("name", false)) model.name = *name;
  if (auto len = t.integer("max_model_len", 0, kInt32Max)) {
    model.max_model_len = static_cast<int32_t>(*len);
  }
  if (auto file = t.string("chat_template", false)) model.chat_template = resolve_path(*file, base_dir);
  auto one_of = [&](const char* key, std::initializer_list<std::string_view> valid, std::string& into) {
    const auto v = t.string(key, false);
    if (!v) return;
    if (std::find(valid.begin(), valid.end(), *v) == valid.end()) {
      std::string names;
      for (std::string_view n : valid) names += (names.empty() ? "" : ", ") + std::string(n);
      t.problems().add(t.value_pos(key), t.key_path(key), "'" + *v + "' is not one of " + names);
      return;
    }
    into = *v;
  };
  one_of("reasoning_parser", {"auto", "none", "think"}, model.reasoning_parser);
  one_of("tool_parser", {"auto", "none", "hermes", "llama3", "mistral"}, model.tool_parser);
  for (auto [key, into] : {std::pair<const char*, std::string*>{"reasoning_start", &model.reasoning_start},
                           std::pair<const char*, std::string*>{"reasoning_end", &model.reasoning_end}}) {
    if (auto tag = t.string(key, false)) {
      if (tag->empty()) t.problems().add(t.value_pos(key), t.key_path(key), "must not be empty");
      else *into = *tag;
    }
  }
  if (model.name.empty() && !model.path.empty()) model.name = model_name_from_path(model.path);
}

void read_server(TableReader& t, ServerConfig& server) {
  if (auto host = t.string("host", false)) server.host = *host;
  if (auto port = t.integer("port", 0, config_rules::kMaxPort)) {
    server.port = static_cast<uint16_t>(*port);
  }
  if (auto n =
          t.integer("http_threads", config_rules::kMinHttpThreads, config_rules::kMaxHttpThreads)) {
    server.http_threads = static_cast<int32_t>(*n);
  }
  if (auto bytes = t.byte_size("max_body_bytes", config_rules::kMinBodyBytes, kInt64Max)) {
    server.max_body_bytes = *bytes;
  }
  if (auto key = t.string("api_key")) server.api_key = *key;
  if (auto prefix = t.string("metrics_prefix")) {
    if (auto problem = config_rules::check_metrics_prefix(*prefix)) {
      t.problems().add(t.value_pos("metrics_prefix"), t.key_path("metrics_prefix"), *problem);
    } else {
      server.metrics_prefix = *prefix;
    }
  }
  config_detail::read_server_limits(t, server.limits);
}

void read_runtime(TableReader& t, RuntimeConfig& runtime) {
  if (auto device = t.string("device")) {
    if (auto problem = config_rules::check_device(*device)) {
      t.problems().add(t.value_pos("device"), t.key_path("device"), *problem);
    } else {
      runtime.device = *device;
    }
  }
  if (auto threads = t.integer("threads", 0, config_rules::kMaxRuntimeThreads)) {
    runtime.threads = static_cast<int32_t>(*threads);
  }
  if (auto seed = t.integer("seed", 0, kInt64Max)) runtime.seed = static_cast<uint64_t>(*seed);
  if (auto k = t.integer("head_top_k", 0, config_rules::kMaxHeadTopK)) runtime.head_top_k = static_cast<int32_t>(*k);
}

void read_logging(TableReader& t, std::string& log_level) {
  if (auto level = t.string("level")) {
    if (auto problem = config_rules::check_log_level(*level)) {
      t.problems().add(t.value_pos("level"), t.key_path("level"), *problem);
    } else {
      log_level = *level;
    }
  }
}

// A plugin table: `plugin`, `path` and `core_key` (when given) are the host's; every other key
// belongs to the plugin, which validates it (the host only converts it to JSON).
PluginTable read_plugin_table(const toml::table& table, const std::string& kind,
                              const fs::path& base_dir, Problems& problems,
                              std::initializer_list<std::string_view> core_keys = {}) {
  PluginTable out;
  TableReader t(table, kind, problems);
  if (const toml::node* n = t.node("plugin"); n == nullptr) {
    problems.add(pos_of(table.source()), kind + ".plugin",
                 "required: the name of the " + kind + " plugin to load");
  } else if (auto name = t.string("plugin")) {
    if (auto problem = config_rules::check_plugin_name(*name)) {
      problems.add(pos_of(n->source()), kind + ".plugin", *problem);
    } else {
      out.plugin = *name;
    }
  }
  if (auto path = t.string("path", false)) out.path = resolve_path(*path, base_dir);

  nlohmann::json rest = nlohmann::json::object();
  for (auto&& [key, value] : table) {
    bool core = key == "plugin" || key == "path";
    for (std::string_view k : core_keys) core = core || key == k;
    if (core) continue;
    rest[std::string(key.str())] =
        config_detail::toml_to_json(value, config_detail::join_key(kind, key.str()), problems);
  }
  out.config_json = rest.dump();
  return out;
}

// [cache] kv_dtype belongs to the core: validated here and left out of what goes to the cache
// plugin.
void read_kv_dtype(const toml::table& cache, Problems& problems, std::string& kv_dtype) {
  const toml::node* n = cache.get("kv_dtype");
  if (n == nullptr) return;
  if (auto value = n->value<std::string>()) {
    if (auto problem = config_rules::check_kv_dtype(*value)) {
      problems.add(pos_of(n->source()), "cache.kv_dtype", *problem);
    } else {
      kv_dtype = *value;
    }
  } else {
    problems.add(pos_of(n->source()), "cache.kv_dtype", "expected a string, got " + type_name(n->type()));
  }
}

// [cache] memory_utilization belongs to the core too (loom-server's KV memory budget).
void read_memory_utilization(const toml::table& cache, Problems& problems, double& fraction) {
  const toml::node* n = cache.get("memory_utilization");
  if (n == nullptr) return;
  // A fixed pool size leaves the fraction nothing to size: say so instead of ignoring it.
  for (const char* fixed : {"kv_memory", "num_blocks"}) {
    if (cache.contains(fixed)) {
      problems.add(pos_of(n->source()), "cache.memory_utilization",
                   std::string("unused when [cache] ") + fixed + " fixes the pool's size; set one of the two");
      return;
    }
  }
  const std::optional<double> value = n->is_number() ? n->value<double>() : std::nullopt;
  if (!value) {
    problems.add(pos_of(n->source()), "cache.memory_utilization",
                 "expected a number, got " + type_name(n->type()));
  } else if (auto problem = config_rules::check_memory_utilization(*value)) {
    problems.add(pos_of(n->source()), "cache.memory_utilization", *problem);
  } else {
    fraction = *value;
  }
}

std::string valid_tables() {
  std::string out;
  for (std::string_view name : kTopLevelTables)
    out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

}  // namespace

std::string model_name_from_path(std::string_view path) {
  std::string p(path);
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  fs::path file = fs::path(p).filename();
  const std::string extension = file.extension().string();
  if (extension == ".gguf" || extension == ".safetensors" || extension == ".bin") {
    return file.stem().string();
  }
  return file.string();
}

Config parse_config(std::string_view toml_text, const std::string& source_path) {
  return parse_config(toml_text, source_path, Config{});
}

Config parse_config(std::string_view toml_text, const std::string& source_path, const Config& base) {
  const std::string file = source_path.empty() ? "<config>" : source_path;
  const fs::path base_dir =
      source_path.empty() ? fs::current_path() : fs::absolute(fs::path(source_path)).parent_path();

  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(file));
  } catch (const toml::parse_error& e) {
    Problems problems(file);
    problems.add(pos_of(e.source()), "", "TOML syntax error: " + std::string(e.description()));
    problems.throw_if_any();
  }

  Config config = base;
  config.source_path = source_path;
  Problems problems(file);

  // Each known top-level entry must be a table; anything else is reported with the valid names.
  auto table_of = [&](std::string_view name) -> const toml::table* {
    const toml::node* n = root.get(name);
    if (n == nullptr) return nullptr;
    if (!n->is_table()) {
      problems.add(pos_of(n->source()), std::string(name),
                   "expected a table, got " + type_name(n->type()));
      return nullptr;
    }
    return n->as_table();
  };
  for (auto&& [key, value] : root) {
    bool known = false;
    for (std::string_view name : kTopLevelTables) known = known || key == name;
    if (known) continue;
    const std::string hint =
        config_detail::closest(key.str(), {kTopLevelTables.begin(), kTopLevelTables.end()});
    problems.add(pos_of(key.source()), config_detail::join_key("", key.str()),
                 std::string(value.is_table() ? "unknown table" : "unknown top-level key") +
                     (hint.empty() ? "" : " (did you mean \"" + hint + "\"?)") +
                     "; valid tables: " + valid_tables());
  }

  if (const toml::table* t = table_of("model")) {
    TableReader reader(*t, "model", problems);
    read_model(reader, base_dir, config.model);
    reader.reject_unknown_keys();
  }
  if (const toml::table* t = table_of("server")) {
    TableReader reader(*t, "server", problems);
    read_server(reader, config.server);
    reader.reject_unknown_keys();
  }
  if (const toml::table* t = table_of("runtime")) {
    TableReader reader(*t, "runtime", problems);
    read_runtime(reader, config.runtime);
    reader.reject_unknown_keys();
  }
  if (const toml::table* t = table_of("plugins")) {
    TableReader reader(*t, "plugins", problems);
    if (auto dirs = reader.string_array("dirs")) {
      for (const std::string& dir : *dirs)
        config.plugin_dirs.push_back(resolve_path(dir, base_dir));
    }
    reader.reject_unknown_keys();
  }
  if (const toml::table* t = table_of("logging")) {
    TableReader reader(*t, "logging", problems);
    read_logging(reader, config.log_level);
    reader.reject_unknown_keys();
  }
  if (const toml::table* t = table_of("slo")) {
    TableReader reader(*t, "slo", problems);
    config_detail::read_slo(reader, config.slo);
    reader.reject_unknown_keys();
  }

  if (const toml::table* t = table_of("embedding")) {
    TableReader reader(*t, "embedding", problems);
    config_detail::read_embedding(reader, base_dir, config.embedding);
    reader.reject_unknown_keys();
  }

  const std::array<std::pair<const char*, PluginTable*>, 4> required = {{
      {"attention", &config.attention},
      {"quantization", &config.quantization},
      {"scheduler", &config.scheduler},
      {"cache", &config.cache},
  }};
  for (const auto& [kind, slot] : required) {
    const toml::table* t = table_of(kind);
    if (t == nullptr) continue;
    if (slot == &config.cache) {
      *slot = merge_plugin_tables(
          *slot, read_plugin_table(*t, kind, base_dir, problems, {"kv_dtype", "memory_utilization"}));
      read_kv_dtype(*t, problems, config.kv_dtype);
      read_memory_utilization(*t, problems, config.memory_utilization);
    } else {
      *slot = merge_plugin_tables(*slot, read_plugin_table(*t, kind, base_dir, problems));
    }
  }
  if (const toml::table* t = table_of("cache_offload")) {
    PluginTable table = read_plugin_table(*t, "cache_offload", base_dir, problems, {"spill", "staging_blocks", "next"});
    config.cache_offload = config.cache_offload ? merge_plugin_tables(*config.cache_offload, table) : table;
    // The chain below: [cache_offload.next], [cache_offload.next.next], ... (replaced whole).
    const toml::table* level = t;
    std::string path = "cache_offload";
    std::vector<PluginTable> next;
    for (;;) {
      if (level == t) {
        TableReader reader(*t, path, problems);
        if (const toml::node* n = reader.node("spill")) {
          if (n->is_boolean()) config.cache_offload_spill = *n->value<bool>();
          else problems.add(pos_of(n->source()), path + ".spill", "must be true or false");
        }
        if (auto v = reader.integer("staging_blocks", 0, 1 << 24)) config.cache_offload_staging_blocks = *v;
      }
      const toml::node* n = level->get("next");
      if (n == nullptr) break;
      path += ".next";
      const toml::table* sub = n->as_table();
      if (sub == nullptr) {
        problems.add(pos_of(n->source()), path, "must be a table naming the tier below: plugin = \"disk\", ...");
        break;
      }
      next.push_back(read_plugin_table(*sub, path, base_dir, problems, {"next"}));
      level = sub;
    }
    if (!next.empty()) config.cache_offload_next = std::move(next);
  }
  if (const toml::table* t = table_of("semantic_cache")) {
    PluginTable table = read_plugin_table(*t, "semantic_cache", base_dir, problems, {"opt_in", "deterministic_only"});
    config_detail::read_semantic_guards(*t, problems, config.semantic_guards);
    config.semantic_cache = config.semantic_cache ? merge_plugin_tables(*config.semantic_cache, table) : table;
  }
  if (const toml::table* t = table_of("speculator")) {
    PluginTable table = read_plugin_table(*t, "speculator", base_dir, problems, {"num_speculative_tokens", "adaptive"});
    config.speculator = config.speculator ? merge_plugin_tables(*config.speculator, table) : table;
    config_detail::read_speculation(*t, problems, config.speculation);
  }

  problems.throw_if_any();
  return config;
}

Config load_config(const std::string& path) { return load_config(path, Config{}); }

Config load_config(const std::string& path, const Config& base) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    throw Error("cannot read config file " + path + ": " + std::strerror(errno),
                LOOM_ERR_NOT_FOUND);
  }
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Error("cannot read config file " + path, LOOM_ERR_NOT_FOUND);
  return parse_config(text.str(), path, base);
}

}  // namespace loom
