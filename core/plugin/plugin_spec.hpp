// What the config says about one plugin to load, and what a listing says about one found.
#pragma once

#include <string>

#include "loom/plugin.h"

namespace loom {

struct PluginSpec {
  loom_plugin_kind kind = LOOM_KIND_SCHEDULER;
  std::string name;                // `plugin = "..."` in the kind's table
  std::string path;                // optional explicit .so; empty = search the plugin dirs
  std::string config_json = "{}";  // the kind's table minus plugin/path, as a JSON object
};

struct PluginInfo {
  loom_plugin_kind kind = LOOM_KIND_SCHEDULER;
  std::string name;     // from the file name (libloom-<kind>-<name>.so)
  std::string version;  // from the descriptor; empty when it could not be read
  std::string description;
  std::string file;
  std::string problem;  // empty when the file loads and passes every check; else the refusal
};

}  // namespace loom
