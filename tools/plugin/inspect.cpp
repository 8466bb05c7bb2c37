#include "tools/plugin/inspect.hpp"

#include <cstddef>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/plugin/host_api.hpp"
#include "core/plugin/plugin_kind.hpp"
#include "core/plugin/plugin_loader.hpp"
#include "loom/sdk_core.hpp"

namespace loom::tools {
namespace {

// kind and name from "libloom-<kind>-<name>.so" (the names the host looks for), when it is one.
struct FileLabel {
  loom_plugin_kind kind = static_cast<loom_plugin_kind>(0);
  std::string name;
};

FileLabel label_of(const std::filesystem::path& file) {
  FileLabel label;
  const std::string fname = file.filename().string();
  const std::string prefix = "libloom-";
  if (fname.rfind(prefix, 0) != 0 || fname.size() < prefix.size() + 4 || fname.substr(fname.size() - 3) != ".so")
    return label;
  const std::string stem = fname.substr(prefix.size(), fname.size() - prefix.size() - 3);
  const size_t dash = stem.find('-');  // kind names have no '-'
  if (dash == std::string::npos) return label;
  if (auto kind = find_kind(stem.substr(0, dash))) {
    label.kind = *kind;
    label.name = stem.substr(dash + 1);
  }
  return label;
}

std::string text_or(const char* s, const char* fallback) { return s != nullptr ? s : fallback; }

void print_config_keys(const loom_plugin_desc& desc, std::ostream& out) {
  const bool has_field = desc.struct_size >= offsetof(loom_plugin_desc, config_schema) + sizeof(desc.config_schema);
  if (!has_field || desc.config_schema == nullptr) {
    out << "config keys: not published\n";
    return;
  }
  const auto schema = nlohmann::json::parse(desc.config_schema, nullptr, false);
  if (schema.is_discarded() || !schema.is_array()) {
    out << "config keys: published, but not a JSON array of keys: " << desc.config_schema << "\n";
    return;
  }
  if (schema.empty()) {
    out << "config keys: none\n";
    return;
  }
  out << "config keys:\n";
  for (const auto& key : schema) {
    auto field = [&](const char* name) -> std::string {
      if (!key.is_object() || !key.contains(name)) return "";
      return key[name].is_string() ? key[name].get<std::string>() : key[name].dump();
    };
    out << "  " << field("key");
    const std::string type = field("type"), def = field("default"), help = field("help");
    if (!type.empty() || !def.empty())
      out << " (" << type << (type.empty() || def.empty() ? "" : ", ") << (def.empty() ? "" : "default " + def) << ")";
    if (!help.empty()) out << ": " << help;
    out << "\n";
  }
}

}  // namespace

int inspect_plugin(const std::filesystem::path& file, std::ostream& out) {
  const FileLabel label = label_of(file);
  const OpenedPlugin opened = PluginLoader::read_descriptor(label.kind, label.name, file);
  const loom_plugin_desc& desc = *opened.desc;

  // The host's own checks decide (the same PluginLoader::open loom-server runs); loaded by file
  // name, the descriptor's name must also match the name in the file name.
  std::string refusal;
  try {
    PluginLoader({}).open(desc.kind, label.name, file);
  } catch (const Error& e) {
    refusal = e.what();
  }

  const std::string kind = kind_name(desc.kind);
  out << "file: " << opened.file << "\n";
  out << "kind: " << kind << "\n";
  if (desc.struct_size >= LOOM_PLUGIN_DESC_MIN_SIZE) {
    out << "name: " << text_or(desc.name, "(none)") << "\n";
    out << "version: " << text_or(desc.version, "(none)") << "\n";
    out << "description: " << text_or(desc.description, "") << "\n";
  }
  out << "ABI version: " << desc.abi_version << " (host: " << LOOM_ABI_VERSION << ")\n";
  if (const auto known = find_kind(kind)) {
    const KindInfo& info = kind_info(*known);
    out << "interface: " << kind << " " << desc.iface_major << "." << desc.iface_minor << " (host: " << info.iface_major
        << "." << info.iface_minor << ")\n";
  } else {
    out << "interface: " << desc.iface_major << "." << desc.iface_minor << " (the host has no such kind)\n";
  }
  out << "accepted by this host: " << (refusal.empty() ? "yes" : "no: " + refusal) << "\n";

  int rc = refusal.empty() ? 0 : 1;
  if (!refusal.empty()) {
    out << "score on this machine: not computed (the host refuses the plugin)\n";
  } else if (desc.score == nullptr) {
    out << "score on this machine: 1 (no score function: runs anywhere)\n";
  } else {
    ThreadPool pool(1);
    HostApi host(pool, desc.kind, label.name.empty() ? text_or(desc.name, "") : label.name);
    sdk::ErrorBuffer reason;
    const int32_t score = desc.score(host.api(), reason.buf());
    out << "score on this machine: " << score;
    if (score <= 0) {
      out << " (cannot run here: " << (reason.str().empty() ? "no reason given" : std::string(reason.str())) << ")";
      rc = 1;
    }
    out << "\n";
  }
  if (desc.struct_size >= LOOM_PLUGIN_DESC_MIN_SIZE) print_config_keys(desc, out);
  return rc;
}

}  // namespace loom::tools
