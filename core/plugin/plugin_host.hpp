// Loads the plugins a config names and creates their instances:
//   locate file(s) -> open + check descriptor -> score (0 = skip this variant) -> validate config
//   -> create -> check vtable.
// Every refusal is one loom::Error line `plugin <kind> '<name>' (<file>): <reason>`; the host
// process stays usable after one.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/plugin/loaded_plugin.hpp"
#include "core/plugin/plugin_loader.hpp"
#include "core/plugin/plugin_spec.hpp"

namespace loom {

class PluginHost {
 public:
  // dirs: the config's [plugins] dirs, searched before the executable's directory. The pool
  // serves every plugin's parallel_for and must outlive every instance.
  PluginHost(ThreadPool& pool, const std::vector<std::string>& dirs);

  // Creates one instance of spec. create_args is the kind's typed create-args struct (NULL for
  // semantic_cache). Throws loom::Error with the refusal line.
  std::unique_ptr<LoadedPlugin> create(const PluginSpec& spec, const void* create_args) const;

  // Every libloom-<kind>-*.so found, with its descriptor's version and description, or the
  // reason it would be refused.
  std::vector<PluginInfo> list(loom_plugin_kind kind) const;

  const PluginLoader& loader() const { return loader_; }

 private:
  ThreadPool& pool_;
  PluginLoader loader_;
};

}  // namespace loom
