// One live plugin instance: RAII over create/destroy. Holds the library (so the .so stays mapped
// until every instance made from it is gone), the host API given to the instance, `self` and the
// kind's vtable.
#pragma once

#include <memory>
#include <string>
#include <utility>

#include "core/common/error.hpp"
#include "core/plugin/host_api.hpp"
#include "core/plugin/plugin_kind.hpp"
#include "core/plugin/plugin_loader.hpp"
#include "loom/sdk_core.hpp"

namespace loom {

class LoadedPlugin {
 public:
  // Takes ownership of self (made by opened.desc->create with host's api).
  LoadedPlugin(OpenedPlugin opened, std::unique_ptr<HostApi> host, void* self, const void* vtable);
  ~LoadedPlugin();  // destroy(self), then the host API, then (last) the library reference
  LoadedPlugin(const LoadedPlugin&) = delete;
  LoadedPlugin& operator=(const LoadedPlugin&) = delete;

  loom_plugin_kind kind() const { return opened_.desc->kind; }
  const std::string& name() const { return name_; }
  std::string version() const { return opened_.desc->version ? opened_.desc->version : ""; }
  const std::string& file() const { return opened_.file; }
  const loom_plugin_desc& desc() const { return *opened_.desc; }
  void* self() const { return self_; }
  const loom_host_api* host_api() const { return host_->api(); }

  // The vtable as the kind's type; throws loom::Error if Vtable is another kind's.
  template <class Vtable>
  const Vtable& vtable() const {
    if (VtableKind<Vtable>::kKind != kind()) {
      throw Error("plugin " + kind_name(kind()) + " '" + name_ + "' has no " +
                  kind_name(VtableKind<Vtable>::kKind) + " vtable");
    }
    return *static_cast<const Vtable*>(vtable_);
  }

  // Whether an (optional) vtable member is present: plugin.has(&loom_cache_vtable::commit).
  template <class Vtable, class Fn>
  bool has(Fn Vtable::*member) const {
    return vtable<Vtable>().*member != nullptr;
  }

  // Calls a vtable member with self first and an error buffer last; returns the status and puts
  // the plugin's message in *message (when not NULL). A NULL member gives LOOM_ERR_UNSUPPORTED.
  template <class Vtable, class Fn, class... Args>
  loom_status try_call(std::string* message, Fn Vtable::*member, Args&&... args) const {
    const auto fn = vtable<Vtable>().*member;
    if (fn == nullptr) {
      if (message != nullptr) *message = "not implemented by this plugin";
      return LOOM_ERR_UNSUPPORTED;
    }
    ErrorBuffer err;
    loom_error_buf buf = err.buf();
    const loom_status status = fn(self_, std::forward<Args>(args)..., &buf);
    if (message != nullptr) *message = status == LOOM_OK ? std::string() : err.str();
    return status;
  }

  // A capability check, member(self, args..., int32_t* ok, err) (cache fits, quantization
  // supports): the answer and, for a no, the plugin's reason, from one call (plugin.h's rule for
  // capability checks). Throws as call() does when the status is not LOOM_OK.
  template <class Vtable, class Fn, class... Args>
  sdk::Verdict ask(const char* what, Fn Vtable::*member, Args&&... args) const {
    int32_t ok = 0;
    ErrorBuffer err;
    loom_error_buf buf = err.buf();
    const auto fn = vtable<Vtable>().*member;
    const loom_status status = fn == nullptr ? LOOM_ERR_UNSUPPORTED : fn(self_, std::forward<Args>(args)..., &ok, &buf);
    if (status != LOOM_OK) {
      throw Error("plugin " + kind_name(kind()) + " '" + name_ + "': " + what + ": " +
                      (fn == nullptr ? std::string("not implemented by this plugin") : std::string(err.str())),
                  status);
    }
    if (ok != 0) return sdk::Verdict::yes();
    return sdk::Verdict::no(err.str().empty() ? std::string("refused without a reason") : std::string(err.str()));
  }

  // As try_call, but throws loom::Error("plugin <kind> '<name>': <what>: <message>", status)
  // unless the call returns LOOM_OK.
  template <class Vtable, class Fn, class... Args>
  void call(const char* what, Fn Vtable::*member, Args&&... args) const {
    std::string message;
    const loom_status status = try_call(&message, member, std::forward<Args>(args)...);
    if (status != LOOM_OK) {
      throw Error("plugin " + kind_name(kind()) + " '" + name_ + "': " + what + ": " + message,
                  status);
    }
  }

 private:
  OpenedPlugin opened_;  // first member: destroyed last, after destroy(self) ran
  std::unique_ptr<HostApi> host_;
  void* self_;
  const void* vtable_;
  std::string name_;
};

}  // namespace loom
