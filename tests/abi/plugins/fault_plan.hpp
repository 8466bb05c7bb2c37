// Fault injection for the engine's failure isolation (hardening issue, deliverable 2): what a
// fault-injecting test plugin does wrong, and when. Each tests/abi/plugins/faulty_<kind>.cpp
// wraps a real plugin of its kind, the shared object named by the key `inner`, and passes every
// call through, except the `fault_on_call`-th call (1-based, counted per member) of the vtable
// member `fault_call`, where it does `fault`:
//   "error"     returns an error status without calling the inner plugin;
//   "throw"     throws inside the plugin (the SDK's guard turns it into a status and message);
//   "bad_value" calls the inner plugin, then spoils its answer (what that means: per kind);
//   "slow"      sleeps `delay_ms` (default 20), then calls the inner plugin as usual.
// `fault_calls` (default 1) makes that many consecutive calls fault, from the fault_on_call-th on.
// Every other key of the table is the inner plugin's own config, handed to it unchanged.
#pragma once

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>

#include <nlohmann/json.hpp>

#include "loom/plugin.h"
#include "loom/sdk_core.hpp"

namespace loom::fault {

enum class Fault { kNone, kError, kThrow, kBadValue, kSlow };

class FaultPlan {
 public:
  // Takes the fault keys (and `inner`) out of `config`, which keeps the inner plugin's keys.
  explicit FaultPlan(nlohmann::json& config) {
    auto take = [&](const char* key) {
      nlohmann::json v = config.contains(key) ? config[key] : nlohmann::json();
      config.erase(key);
      return v;
    };
    const nlohmann::json inner = take("inner"), call = take("fault_call"), on = take("fault_on_call"),
                         fault = take("fault"), calls = take("fault_calls"), delay = take("delay_ms");
    if (!inner.is_string()) throw sdk::ConfigError("\"inner\": the wrapped plugin's shared object, a path");
    inner_ = inner.get<std::string>();
    if (call.is_null()) return;  // no fault: the wrapper only passes calls through
    if (!call.is_string() || !on.is_number_integer() || on.get<int64_t>() < 1)
      throw sdk::ConfigError("\"fault_call\" (a vtable member) needs \"fault_on_call\" >= 1");
    call_ = call.get<std::string>();
    on_call_ = on.get<int64_t>();
    if (calls.is_number_integer()) num_calls_ = calls.get<int64_t>();
    const std::string f = fault.is_string() ? fault.get<std::string>() : "";
    fault_ = f == "error"       ? Fault::kError
             : f == "throw"     ? Fault::kThrow
             : f == "bad_value" ? Fault::kBadValue
             : f == "slow"      ? Fault::kSlow
                                : Fault::kNone;
    if (fault_ == Fault::kNone)
      throw sdk::ConfigError("\"fault\": one of \"error\", \"throw\", \"bad_value\", \"slow\"");
    if (delay.is_number_integer()) delay_ms_ = delay.get<int64_t>();
  }

  const std::string& inner() const { return inner_; }

  // Counts one call of the vtable member `name` and says what to do wrong in it: kNone for a
  // clean call. "throw" throws right here.
  Fault at(std::string_view name) {
    if (name != call_) return Fault::kNone;
    ++calls_;
    if (calls_ < on_call_ || calls_ >= on_call_ + num_calls_) return Fault::kNone;
    if (fault_ == Fault::kThrow) throw std::runtime_error(what());
    if (fault_ == Fault::kSlow) {
      std::this_thread::sleep_for(std::chrono::milliseconds(delay_ms_));
      return Fault::kNone;
    }
    return fault_;
  }
  // The text of the faulting call's error: tests look for it in the request's error.
  std::string what() const { return "injected fault: " + call_ + " call " + std::to_string(calls_); }

 private:
  std::string inner_;
  std::string call_;
  int64_t on_call_ = 0;
  int64_t num_calls_ = 1;
  int64_t delay_ms_ = 20;
  int64_t calls_ = 0;
  Fault fault_ = Fault::kNone;
};

// The wrapped plugin: its shared object opened here, one instance created with the host, create
// args and config the wrapper got, destroyed (and the library closed) with this object.
class InnerPlugin {
 public:
  InnerPlugin(const std::string& path, loom_plugin_kind kind, const loom_host_api* host, const void* create_args,
              const nlohmann::json& config) {
    library_ = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (library_ == nullptr) throw sdk::ConfigError("inner " + path + ": " + dlerror());
    // BOOST_DLL_ALIAS exports a pointer variable holding the entry function's address.
    auto* alias = static_cast<void* const*>(dlsym(library_, LOOM_PLUGIN_ENTRY_SYMBOL));
    if (alias == nullptr) fail("no entry symbol");
    const loom_plugin_desc* d = reinterpret_cast<loom_plugin_entry_fn>(*alias)();
    if (d == nullptr || d->kind != kind) fail("not a plugin of the wrapper's kind");
    desc_ = d;
    const std::string json = config.dump();
    sdk::ErrorBuffer err;
    const void* vtable = nullptr;
    const loom_status status = desc_->create(host, create_args, json.c_str(), &self_, &vtable, err.buf());
    if (status != LOOM_OK) fail(std::string(err.str()));
    vtable_ = vtable;
  }
  ~InnerPlugin() {
    if (self_ != nullptr) desc_->destroy(self_);
    dlclose(library_);
  }
  InnerPlugin(const InnerPlugin&) = delete;
  InnerPlugin& operator=(const InnerPlugin&) = delete;

  void* self() const { return self_; }
  template <class Vtable>
  const Vtable& vtable() const {
    return *static_cast<const Vtable*>(vtable_);
  }
  // Calls a member of the inner vtable with self first and an error buffer last; an error comes
  // back as sdk::Error with the inner plugin's status and message.
  template <class Fn, class... Args>
  void call(Fn fn, Args... args) const {
    sdk::ErrorBuffer err;
    const loom_status status = fn(self_, args..., err.buf());
    if (status != LOOM_OK) throw sdk::Error(status, std::string(err.str()));
  }

 private:
  [[noreturn]] void fail(const std::string& why) {
    dlclose(library_);
    throw sdk::ConfigError("inner plugin: " + why);
  }

  void* library_ = nullptr;
  const loom_plugin_desc* desc_ = nullptr;
  void* self_ = nullptr;
  const void* vtable_ = nullptr;
};

// The parsed config text of a wrapper: its own keys and the inner plugin's.
inline nlohmann::json config_of(std::string_view json) {
  nlohmann::json config = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (!config.is_object()) throw sdk::ConfigError("the config is not a JSON object");
  return config;
}

// The base of a wrapper class of one kind: the plan and the inner plugin, made from the host,
// create args and config text the SDK hands the wrapper's constructor (inherit it).
template <class Vtable, class CreateArgs, loom_plugin_kind kKind>
class Wrapper {
 public:
  Wrapper(const sdk::Host& host, const CreateArgs& args, std::string_view json)
      : config_(config_of(json)), plan_(config_), inner_(plan_.inner(), kKind, host.api(), &args, config_) {}

 protected:
  const Vtable& vt() const { return inner_.vtable<Vtable>(); }

  nlohmann::json config_;  // the inner plugin's keys once plan_ took its own
  FaultPlan plan_;
  InnerPlugin inner_;
};

}  // namespace loom::fault
