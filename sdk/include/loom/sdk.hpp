// Loom SDK for plugin authors: write a plain C++ class, get the C ABI.
//
//   class MyScheduler {
//    public:
//     MyScheduler(const loom::sdk::Host& host, const loom_scheduler_create_args& args,
//                 std::string_view config_json);          // throw loom::sdk::ConfigError on bad
//                 keys
//     loom_status add_request(const loom_request_view* req);
//     loom_status remove_request(uint64_t request_id);
//     loom_status schedule(const loom_sched_context* ctx, loom_sched_output* out);
//     loom_status stats(loom_sched_stats* out);
//     // optional:
//     static int32_t score(const loom::sdk::Host& host, std::string& reason);
//     static void validate(std::string_view config_json, std::string& problems);
//   };
//   LOOM_SCHEDULER_PLUGIN(MyScheduler, "my_scheduler", "0.1.0", "one-line description");
//
// Methods take the C vtable function's arguments minus `self` and `err` and return loom_status or
// void. Every trampoline runs inside a guard: an exception becomes a status (ConfigError ->
// LOOM_ERR_CONFIG, sdk::Error -> its status, std::bad_alloc -> LOOM_ERR_OUT_OF_MEMORY, anything
// else -> LOOM_ERR_INTERNAL) and its text is written to the caller's error buffer. A capability
// check (cache fits/can_allocate, quantization supports) may return a Verdict {ok, reason}: the
// host gets the answer and the reason from one call. Where a C function has a single out-pointer
// the method may return the value instead (sdk_vtables.hpp lists them per kind).
//
// The constructor is either (const Host&, const <kind>_create_args&, C) or (const Host&, C),
// where C is std::string_view (the config's JSON text) or, for a class with
//   static const loom::sdk::ConfigSpec<Config>& config_spec();   // sdk_config.hpp
// the parsed `const Config&`. With config_spec() the descriptor also gets validate() and its
// config_schema (the keys, types, defaults and help) for free. `score` and `validate` are found
// with requires-expressions; `score` may take `const loom_host_api*` instead of `const Host&`;
// `validate` may return bool (false = invalid) or void (invalid when `problems` is not empty).
// Use the LOOM_*_PLUGIN macro once per shared object, at global namespace scope.
#pragma once

// Boost.DLL's alias machinery only needs paths for import; std::filesystem keeps plugins free of
// a link dependency on Boost.Filesystem.
#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/alias.hpp>

#include "loom/sdk_core.hpp"
#include "loom/sdk_vtables.hpp"
#include "loom/sdk_speculator.hpp"

#include <string>
#include <type_traits>

namespace loom::sdk::detail {

template <class T>
concept HasScoreHost = requires(const Host& h, std::string& r) {
  { T::score(h, r) } -> std::convertible_to<int32_t>;
};
template <class T>
concept HasScoreApi = requires(const loom_host_api* h, std::string& r) {
  { T::score(h, r) } -> std::convertible_to<int32_t>;
};
template <class T>
concept HasValidate = requires(std::string_view json, std::string& problems) {
  T::validate(json, problems);
};
// A class that publishes its config keys: static const ConfigSpec<Config>& config_spec()
// (sdk_config.hpp). Then validate() comes from the spec, the descriptor's config_schema lists
// the keys, and the constructor may take the parsed `const Config&` instead of the JSON text.
template <class T>
concept HasConfigSpec = requires { T::config_spec().parse(std::string_view()); };
template <class T>
struct ConfigOf {
  using Type = void;
};
template <HasConfigSpec T>
struct ConfigOf<T> {
  using Type = std::remove_cvref_t<decltype(T::config_spec().parse(std::string_view()))>;
};

// The descriptor and its functions for plugin class T of the kind whose vtable is Vtable.
template <class T, class Vtable>
struct Plugin {
  using Traits = KindTraits<Vtable>;
  using CreateArgs = typename Traits::CreateArgs;

  using Config = typename ConfigOf<T>::Type;
  struct None {};  // stands in for a void Config or CreateArgs in the traits below
  using ArgsRef = const std::conditional_t<std::is_void_v<CreateArgs>, None, CreateArgs>&;
  using ConfigRef = const std::conditional_t<std::is_void_v<Config>, None, Config>&;
  // What the constructor takes after the Host (and the create args): the parsed Config or the text.
  static constexpr bool kTakesConfig =
      !std::is_void_v<Config> && (std::is_constructible_v<T, const Host&, ConfigRef> ||
                                  (!std::is_void_v<CreateArgs> && std::is_constructible_v<T, const Host&, ArgsRef, ConfigRef>));
  using ConfigArg = std::conditional_t<kTakesConfig, ConfigRef, std::string_view>;
  static constexpr bool kTakesArgs =
      !std::is_void_v<CreateArgs> && std::is_constructible_v<T, const Host&, ArgsRef, ConfigArg>;

  // The create args, checked: present, and at least as large as the struct the plugin was built
  // with (the loader's version table already refused an older host, so this guards direct use).
  static ArgsRef args_of(const void* create_args) {
    if (create_args == nullptr) throw Error(LOOM_ERR_INVALID_ARGUMENT, "create: create_args is NULL");
    const auto* args = static_cast<const CreateArgs*>(create_args);
    if (args->struct_size < sizeof(CreateArgs)) {
      throw Error(LOOM_ERR_INVALID_ARGUMENT,
                  "create: create_args struct_size " + std::to_string(args->struct_size) +
                      " is smaller than the " + std::to_string(sizeof(CreateArgs)) +
                      " bytes this plugin was built with");
    }
    return *args;
  }

  static int32_t score(const loom_host_api* host, loom_error_buf* reason) noexcept {
    try {
      std::string why;
      int32_t value;
      if constexpr (HasScoreHost<T>) {
        value = static_cast<int32_t>(T::score(Host(host), why));
      } else {
        value = static_cast<int32_t>(T::score(host, why));
      }
      if (value <= 0) {
        write_error(reason, why.empty() ? "refused by the plugin's score()" : why);
        return 0;
      }
      return value;
    } catch (const std::exception& e) {
      write_error(reason, std::string("score() threw: ") + e.what());
    } catch (...) {
      write_error(reason, "score() threw an unknown exception");
    }
    return 0;
  }

  static loom_status validate(const char* config_json, loom_error_buf* err) noexcept {
    return guarded(err, [&]() -> loom_status {
      std::string problems;
      bool ok = true;
      const std::string_view json = config_json != nullptr ? config_json : "{}";
      if constexpr (HasValidate<T>) {
        if constexpr (std::is_same_v<decltype(T::validate(json, problems)), bool>) {
          ok = T::validate(json, problems);
        } else {
          T::validate(json, problems);
        }
      } else {
        problems = T::config_spec().problems(json);
      }
      if (ok && problems.empty()) return LOOM_OK;
      throw ConfigError(problems.empty() ? "invalid config" : problems);
    });
  }

  static loom_status create(const loom_host_api* host, const void* create_args,
                            const char* config_json, void** self, const void** vtable,
                            loom_error_buf* err) noexcept {
    if (self == nullptr || vtable == nullptr) {
      write_error(err, "create: self and vtable out-pointers must not be NULL");
      return LOOM_ERR_INVALID_ARGUMENT;
    }
    *self = nullptr;
    *vtable = nullptr;
    return guarded(err, [&]() -> loom_status {
      const Host h(host);
      const std::string_view json = config_json != nullptr ? config_json : "{}";
      // The config: the parsed struct when the class takes it, else the JSON text.
      auto config = [&]() -> decltype(auto) {
        if constexpr (kTakesConfig)
          return T::config_spec().parse(json);
        else
          return json;
      };
      T* object = nullptr;
#if LOOM_CACHE_IFACE_MINOR >= 5
      // Cache 1.5: block-table groups go only to a class that hands their tables out; the host
      // makes any other cache again with one group.
      if constexpr (std::is_same_v<Vtable, loom_cache_vtable> && !detail::HasGroupBlockTable<T>) {
        if (args_of(create_args).n_groups > 1)
          throw Error(LOOM_ERR_UNSUPPORTED, "this cache keeps one block table per sequence (no group_block_table, "
                                            "cache interface 1.5)");
      }
#endif
      if constexpr (kTakesArgs) {
        object = new T(h, args_of(create_args), config());
      } else {
        static_assert(std::is_constructible_v<T, const Host&, ConfigArg>,
                      "a plugin class needs a constructor (const loom::sdk::Host&, "
                      "const <kind>_create_args&, C) or (const Host&, C), where C is "
                      "std::string_view or the config_spec()'s const Config&");
        object = new T(h, config());
      }
      *self = object;
      *vtable = &VtableFor<Vtable, T>::kTable;
      return LOOM_OK;
    });
  }

  static void destroy(void* self) noexcept {
    try {
      delete static_cast<T*>(self);
    } catch (...) {  // destructors are noexcept by default; a throwing one must not cross
    }
  }

  static loom_plugin_desc describe(const char* name, const char* version, const char* description) {
    loom_plugin_desc d{};
    d.struct_size = sizeof(loom_plugin_desc);
    d.abi_version = LOOM_ABI_VERSION;
    d.kind = Traits::kKind;
    d.iface_major = Traits::kMajor;
    d.iface_minor = Traits::kMinor;
    d.name = name;
    d.version = version;
    d.description = description;
    if constexpr (HasScoreHost<T> || HasScoreApi<T>) d.score = &score;
    if constexpr (HasValidate<T> || HasConfigSpec<T>) d.validate = &validate;
    d.create = &create;
    d.destroy = &destroy;
    if constexpr (HasConfigSpec<T>) {
      static const std::string schema = T::config_spec().schema_json();  // static storage
      d.config_schema = schema.c_str();
    }
    return d;
  }
};

}  // namespace loom::sdk::detail

// Defines the plugin's entry and exports it as loom_plugin_entry_v1. Use once per shared object,
// at global namespace scope, followed by a semicolon.
#define LOOM_PLUGIN(VTABLE, CLASS, NAME, VERSION, DESCRIPTION)                            \
  namespace loom_sdk_generated {                                                          \
  const loom_plugin_desc* plugin_entry() {                                                \
    static const loom_plugin_desc desc =                                                  \
        ::loom::sdk::detail::Plugin<CLASS, VTABLE>::describe(NAME, VERSION, DESCRIPTION); \
    return &desc;                                                                         \
  }                                                                                       \
  }                                                                                       \
  BOOST_DLL_ALIAS(loom_sdk_generated::plugin_entry, loom_plugin_entry_v1)                 \
  static_assert(true, "")

#define LOOM_ATTENTION_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_attention_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_QUANTIZATION_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_quantization_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_SCHEDULER_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_scheduler_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_CACHE_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_cache_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_CACHE_OFFLOAD_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_cache_offload_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_SEMANTIC_CACHE_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_semantic_cache_vtable, CLASS, NAME, VERSION, DESCRIPTION)
#define LOOM_SPECULATOR_PLUGIN(CLASS, NAME, VERSION, DESCRIPTION) \
  LOOM_PLUGIN(loom_speculator_vtable, CLASS, NAME, VERSION, DESCRIPTION)
