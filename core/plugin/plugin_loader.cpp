#include "core/plugin/plugin_loader.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <system_error>

#include "core/common/error.hpp"
#include "core/plugin/plugin_kind.hpp"

// std::filesystem paths for Boost.DLL, as in sdk.hpp; every TU that includes Boost.DLL in the
// host must agree on this.
#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/shared_library.hpp>

namespace loom {
namespace fs = std::filesystem;

namespace {

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (const auto& p : parts) {
    if (!out.empty()) out += sep;
    out += p;
  }
  return out;
}

// Plugin names become part of a file name: keep them to one path component.
bool valid_name(std::string_view name) {
  if (name.empty()) return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
           c == '-';
  });
}

bool is_file(const fs::path& p) {
  std::error_code ec;
  return fs::is_regular_file(p, ec);
}

}  // namespace

std::string plugin_refusal(loom_plugin_kind kind, std::string_view name, std::string_view file,
                           std::string_view reason) {
  std::string line = "plugin " + kind_name(kind) + " '" + std::string(name) + "' (" +
                     std::string(file) + "): " + std::string(reason);
  // One line: a plugin's message must not break the log format.
  std::replace(line.begin(), line.end(), '\n', ' ');
  return line;
}

PluginLoader::PluginLoader(const std::vector<std::string>& dirs) {
  auto add = [this](const fs::path& dir) {
    if (dir.empty()) return;
    std::error_code ec;
    const fs::path normal = fs::weakly_canonical(dir, ec);
    const fs::path& use = ec ? dir : normal;
    if (std::find(dirs_.begin(), dirs_.end(), use) == dirs_.end()) dirs_.push_back(use);
  };
  for (const auto& d : dirs) add(d);
  add(executable_dir());
}

std::string PluginLoader::file_name(loom_plugin_kind kind, std::string_view name) {
  return "libloom-" + kind_name(kind) + "-" + std::string(name) + ".so";
}

std::vector<fs::path> PluginLoader::locate(const PluginSpec& spec) const {
  if (!spec.path.empty()) {
    if (!is_file(spec.path)) {
      throw Error(plugin_refusal(spec.kind, spec.name, spec.path, "file not found"),
                  LOOM_ERR_NOT_FOUND);
    }
    return {fs::path(spec.path)};
  }
  const std::string file = file_name(spec.kind, spec.name);
  if (!valid_name(spec.name)) {
    throw Error(plugin_refusal(spec.kind, spec.name, file,
                               "invalid plugin name (use letters, digits, '_' and '-')"),
                LOOM_ERR_CONFIG);
  }
  std::vector<fs::path> found;
  std::vector<std::string> searched;
  for (const auto& dir : dirs_) {
    const fs::path candidate = dir / file;
    searched.push_back(candidate.string());
    if (is_file(candidate)) found.push_back(candidate);
  }
  if (found.empty()) {
    const auto names = available(spec.kind);
    std::string reason =
        "not found; searched " + (searched.empty() ? "nothing" : join(searched, ", "));
    reason += "; available " + kind_name(spec.kind) +
              " plugins: " + (names.empty() ? std::string("none") : join(names, ", "));
    throw Error(plugin_refusal(spec.kind, spec.name, file, reason), LOOM_ERR_NOT_FOUND);
  }
  return found;
}

std::vector<fs::path> PluginLoader::files(loom_plugin_kind kind) const {
  const std::string prefix = "libloom-" + kind_name(kind) + "-";
  std::vector<fs::path> out;
  for (const auto& dir : dirs_) {
    std::error_code ec;
    std::vector<fs::path> in_dir;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      const std::string fname = it->path().filename().string();
      if (fname.size() > prefix.size() + 3 && fname.compare(0, prefix.size(), prefix) == 0 &&
          fname.compare(fname.size() - 3, 3, ".so") == 0 && is_file(it->path())) {
        in_dir.push_back(it->path());
      }
    }
    std::sort(in_dir.begin(), in_dir.end());
    out.insert(out.end(), in_dir.begin(), in_dir.end());
  }
  return out;
}

std::vector<std::string> PluginLoader::available(loom_plugin_kind kind) const {
  const size_t prefix_len = ("libloom-" + kind_name(kind) + "-").size();
  std::vector<std::string> names;
  for (const auto& f : files(kind)) {
    const std::string fname = f.filename().string();
    names.push_back(fname.substr(prefix_len, fname.size() - prefix_len - 3));
  }
  std::sort(names.begin(), names.end());
  names.erase(std::unique(names.begin(), names.end()), names.end());
  return names;
}

OpenedPlugin PluginLoader::open(loom_plugin_kind kind, std::string_view name,
                                const fs::path& file) const {
  const std::string file_text = file.string();
  auto refuse = [&](const std::string& reason, loom_status code = LOOM_ERR_UNSUPPORTED) {
    return Error(plugin_refusal(kind, name, file_text, reason), code);
  };
  if (!is_file(file)) throw refuse("file not found", LOOM_ERR_NOT_FOUND);

  // RTLD_NOW: an unresolved symbol fails here, not mid-request. RTLD_LOCAL: plugins cannot
  // see (or clash with) each other's symbols.
  auto library = std::make_shared<boost::dll::shared_library>();
  (void)dlerror();  // clear, so what we read below is this load's message
  boost::dll::fs::error_code ec;
  library->load(file, boost::dll::load_mode::rtld_now | boost::dll::load_mode::rtld_local, ec);
  if (ec || !library->is_loaded()) {
    const char* why = dlerror();  // Boost.DLL keeps only a generic code; dlopen knows the cause
    throw refuse(std::string("cannot load: ") + (why != nullptr ? why : ec.message()));
  }
  if (!library->has(LOOM_PLUGIN_ENTRY_SYMBOL)) {
    throw refuse(std::string("no entry symbol '") + LOOM_PLUGIN_ENTRY_SYMBOL +
                 "' (not a Loom plugin, or built without a LOOM_*_PLUGIN macro)");
  }
  // The alias is a pointer variable holding the entry function's address (BOOST_DLL_ALIAS).
  auto& entry = library->get_alias<const loom_plugin_desc*()>(LOOM_PLUGIN_ENTRY_SYMBOL);
  const loom_plugin_desc* desc = entry();
  if (desc == nullptr) throw refuse("entry function returned no descriptor (NULL)");

  if (desc->struct_size < LOOM_PLUGIN_DESC_MIN_SIZE) {
    throw refuse("descriptor struct_size " + std::to_string(desc->struct_size) +
                 " is smaller than the " + std::to_string(LOOM_PLUGIN_DESC_MIN_SIZE) +
                 " bytes the host reads (built against an older, incompatible SDK?)");
  }
  if (desc->abi_version != LOOM_ABI_VERSION) {
    throw refuse("ABI version " + std::to_string(desc->abi_version) +
                 " does not match the host's ABI version " + std::to_string(LOOM_ABI_VERSION) +
                 "; rebuild the plugin against this SDK");
  }
  if (desc->kind != kind) {
    throw refuse("the file holds a " + kind_name(desc->kind) + " plugin, not a " + kind_name(kind) +
                 " plugin");
  }
  // The growth rule (plugin_kind.hpp): same major, a minor no newer than the host's.
  if (auto why = version_refusal(kind, desc->iface_major, desc->iface_minor)) throw refuse(*why);
  const std::string desc_name = desc->name != nullptr ? desc->name : "";
  if (!name.empty() && desc_name != name) {
    throw refuse("the descriptor's name is '" + desc_name + "', not '" + std::string(name) + "'");
  }
  if (desc->create == nullptr || desc->destroy == nullptr) {
    throw refuse("the descriptor has no create or destroy function");
  }

  OpenedPlugin out;
  out.library = library;  // shared_ptr<void>: the .so stays mapped while any copy lives
  out.desc = desc;
  out.file = file_text;
  return out;
}

}  // namespace loom
