// The plugin kinds as the host knows them: names ("scheduler"), interface versions and the sizes
// of the structs a plugin of each kind must provide.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "loom/attention.h"
#include "loom/cache.h"
#include "loom/cache_offload.h"
#include "loom/quantization.h"
#include "loom/scheduler.h"
#include "loom/semantic_cache.h"

namespace loom {

struct KindInfo {
  loom_plugin_kind kind;
  std::string_view name;  // as in config tables and file names: "cache_offload"
  uint32_t iface_major;   // the host's interface version for this kind
  uint32_t iface_minor;
  size_t vtable_size;  // the vtable size the host was built with (what it reads)
};

// Every kind, in enum order.
const std::vector<KindInfo>& all_kinds();

// Facts about one kind. Throws loom::Error for a value outside the enum.
const KindInfo& kind_info(loom_plugin_kind kind);

// "scheduler" for LOOM_KIND_SCHEDULER; "unknown(<n>)" for a value outside the enum.
std::string kind_name(loom_plugin_kind kind);

// The kind named `name`, or nullopt.
std::optional<loom_plugin_kind> find_kind(std::string_view name);

// The kind named `name`; throws loom::Error listing the valid names otherwise.
loom_plugin_kind parse_kind(std::string_view name);

// Maps a vtable type to its kind, for typed access to a loaded plugin.
template <class Vtable>
struct VtableKind;
template <>
struct VtableKind<loom_attention_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_ATTENTION;
};
template <>
struct VtableKind<loom_quantization_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_QUANTIZATION;
};
template <>
struct VtableKind<loom_scheduler_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SCHEDULER;
};
template <>
struct VtableKind<loom_cache_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_CACHE;
};
template <>
struct VtableKind<loom_cache_offload_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_CACHE_OFFLOAD;
};
template <>
struct VtableKind<loom_semantic_cache_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SEMANTIC_CACHE;
};

}  // namespace loom
