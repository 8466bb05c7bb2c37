#include "core/plugin/loaded_plugin.hpp"

namespace loom {

LoadedPlugin::LoadedPlugin(OpenedPlugin opened, std::unique_ptr<HostApi> host, void* self,
                           const void* vtable)
    : opened_(std::move(opened)),
      host_(std::move(host)),
      self_(self),
      vtable_(vtable),
      name_(opened_.desc->name != nullptr ? opened_.desc->name : "") {}

LoadedPlugin::~LoadedPlugin() {
  // destroy() is declared never to fail; the SDK's trampoline swallows what a destructor throws.
  if (self_ != nullptr) opened_.desc->destroy(self_);
}

}  // namespace loom
