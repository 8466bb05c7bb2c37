// Finding and opening plugin shared objects, and checking their descriptors. Every refusal is
// one line, `plugin <kind> '<name>' (<file>): <reason>`, thrown as loom::Error.
#pragma once

#include "core/common/executable_dir.hpp"

#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "core/plugin/plugin_spec.hpp"
#include "loom/plugin.h"

namespace loom {

// An opened plugin library and its checked descriptor. `library` keeps the .so mapped; every
// object made from it must hold a copy.
struct OpenedPlugin {
  std::shared_ptr<void> library;
  const loom_plugin_desc* desc = nullptr;
  std::string file;
};

// The one-line message for a refused plugin.
std::string plugin_refusal(loom_plugin_kind kind, std::string_view name, std::string_view file,
                           std::string_view reason);


class PluginLoader {
 public:
  // Where an installed tree keeps the plugins, relative to the executable's directory.
  static constexpr const char* kInstalledPluginDir = "../lib/loom/plugins";

  // Searches `dirs` in order, then the executable's directory, then kInstalledPluginDir below it
  // when that exists. Duplicates are dropped.
  explicit PluginLoader(const std::vector<std::string>& dirs);

  const std::vector<std::filesystem::path>& search_dirs() const { return dirs_; }

  // "libloom-<kind>-<name>.so".
  static std::string file_name(loom_plugin_kind kind, std::string_view name);

  // The files to try for spec, in search order (more than one: variants, chosen by score).
  // Throws the refusal line when there is none: an explicit path that does not exist, or a name
  // found nowhere (listing every path searched and the names available).
  std::vector<std::filesystem::path> locate(const PluginSpec& spec) const;

  // Every libloom-<kind>-*.so in the search dirs, in search order.
  std::vector<std::filesystem::path> files(loom_plugin_kind kind) const;

  // The plugin names available for kind, sorted, without duplicates.
  std::vector<std::string> available(loom_plugin_kind kind) const;

  // Opens file (RTLD_NOW | RTLD_LOCAL) and checks the descriptor: entry present, not NULL,
  // struct_size, exact ABI version, kind, interface major/minor, name (`name` empty: any),
  // create/destroy present. Throws the refusal line on the first failure.
  OpenedPlugin open(loom_plugin_kind kind, std::string_view name,
                    const std::filesystem::path& file) const;

  // The first half of open: the file loaded and its entry called, the descriptor not yet checked
  // (loom-plugin inspect shows a descriptor the host would refuse). kind and name only label the
  // refusal line: no entry symbol, or a NULL descriptor.
  static OpenedPlugin read_descriptor(loom_plugin_kind kind, std::string_view name,
                                      const std::filesystem::path& file);

 private:
  std::vector<std::filesystem::path> dirs_;
};

}  // namespace loom
