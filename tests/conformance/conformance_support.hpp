// Shared by the conformance tests: the plugin names under test and creating an instance through
// the real plugin host, telling "cannot run here / unsupported case" (skip) from failure.
#pragma once

#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom::conformance {

// LOOM_CONFORMANCE_PLUGINS: the kind's plugin names, comma-separated (from CMake).
inline std::vector<std::string> plugin_names() {
  std::vector<std::string> names;
  std::stringstream in(LOOM_CONFORMANCE_PLUGINS);
  std::string name;
  while (std::getline(in, name, ',')) {
    if (!name.empty()) names.push_back(name);
  }
  return names;
}

// Creates the plugin, or returns nullptr with *skip_reason set when it refuses this machine or
// this case as unsupported. Any other refusal throws.
inline std::unique_ptr<LoadedPlugin> create_or_skip(const PluginHost& host, loom_plugin_kind kind,
                                                    const std::string& name, const void* args,
                                                    std::string* skip_reason, const std::string& config = "{}") {
  try {
    return host.create(PluginSpec{kind, name, "", config}, args);
  } catch (const Error& e) {
    // Only a score of 0 or a create() that answered LOOM_ERR_UNSUPPORTED is a skip; any other
    // refusal (bad argument, internal error) is a failure.
    const std::string m = e.what();
    if (m.find("refused to run on this machine") == std::string::npos &&
        m.find("create failed (unsupported)") == std::string::npos)
      throw;
    *skip_reason = m;
    return nullptr;
  }
}

}  // namespace loom::conformance
