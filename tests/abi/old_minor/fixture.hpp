// Plugins built against an OLDER minor of their kind's interface, as a plugin compiled before the
// kind last grew would be: each fixture carries its own copy of that minor's vtable (and create
// args) layout and includes only plugin.h and types.h, which every minor of ABI 1 shares.
// LOOM_FIXTURE_MINOR is the minor its descriptor claims (tests/abi/CMakeLists.txt also builds the
// minor-0 kinds claiming the host's minor + 1, to see them refused).
#pragma once

#ifndef BOOST_DLL_USE_STD_FS
#define BOOST_DLL_USE_STD_FS
#endif
#include <boost/dll/alias.hpp>

#include <cstring>
#include <type_traits>

#include "loom/plugin.h"

#ifndef LOOM_FIXTURE_MINOR
#error "LOOM_FIXTURE_MINOR must be defined"
#endif

namespace loom_fixture {

inline void say(loom_error_buf* err, const char* text) {
  if (err == nullptr || err->data == nullptr || err->capacity == 0) return;
  std::strncpy(err->data, text, err->capacity - 1);
  err->data[err->capacity - 1] = '\0';
}

// A vtable followed by a non-NULL pointer: a host that read past struct_size (where the members of
// newer minors would be) would find something there instead of treating the member as NULL.
template <class Vtable>
struct Guarded {
  Vtable vtable;
  const void* beyond;
};

// create(): refuses create args shorter than the plugin's own copy of them (Args void: the kind
// has none), makes a Self and hands back `table`.
template <class Args, class Self>
loom_status make(const void* create_args, const void* table, void** self, const void** vtable, loom_error_buf* err) {
  if constexpr (!std::is_void_v<Args>) {
    const auto* args = static_cast<const Args*>(create_args);
    if (args == nullptr || args->struct_size < sizeof(Args)) {
      say(err, "create args missing or shorter than the plugin's");
      return LOOM_ERR_INVALID_ARGUMENT;
    }
  }
  *self = new Self;
  *vtable = table;
  return LOOM_OK;
}

template <class Self>
void destroy(void* self) {
  delete static_cast<Self*>(self);
}

}  // namespace loom_fixture

// The descriptor and exported entry of a fixture whose instances are Self, made by make<Args, Self>
// with `TABLE` as the vtable.
#define LOOM_FIXTURE_CREATE(ARGS, SELF, TABLE)                                                          \
  loom_status create(const loom_host_api*, const void* create_args, const char*, void** self,          \
                     const void** vtable, loom_error_buf* err) {                                        \
    return loom_fixture::make<ARGS, SELF>(create_args, TABLE, self, vtable, err);                       \
  }                                                                                                     \
  static_assert(true, "")

// The descriptor and exported entry of a fixture: kind, name, its create and destroy.
#define LOOM_FIXTURE_PLUGIN(KIND, NAME, CREATE, DESTROY)                                                    \
  namespace loom_fixture {                                                                                  \
  const loom_plugin_desc* entry() {                                                                         \
    static const loom_plugin_desc desc = {LOOM_PLUGIN_DESC_MIN_SIZE, LOOM_ABI_VERSION, KIND, 1,             \
                                          LOOM_FIXTURE_MINOR, NAME, "0.0.1", "built against an older minor", \
                                          nullptr, nullptr, &CREATE, &DESTROY, nullptr};                    \
    return &desc;                                                                                           \
  }                                                                                                         \
  }                                                                                                         \
  BOOST_DLL_ALIAS(loom_fixture::entry, loom_plugin_entry_v1)                                                \
  static_assert(true, "")
