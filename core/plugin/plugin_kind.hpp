// The plugin kinds as the host knows them: names ("scheduler"), interface versions, and per minor
// version the sizes of the structs a plugin of that minor provides (its vtable) and reads (its
// create args).
//
// The growth rule, the same for every kind: structs only grow at the end, one minor version at a
// time. A host loads a plugin of the same major and any minor up to its own: the plugin's smaller
// vtable is accepted (members past its struct_size read as NULL, see sdk::present), and the host's
// larger create args are read only as far as the plugin knows them. A plugin with a newer minor
// (or another major) than the host is refused, naming both versions.
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
#include "loom/speculator.h"

namespace loom {

// What a plugin built against minor `minor` of its kind's header has: sizeof its vtable and of its
// create args (0: the kind has none) at that minor.
struct KindVersion {
  uint32_t minor;
  size_t vtable_size;
  size_t create_args_size;
};

struct KindInfo {
  loom_plugin_kind kind;
  std::string_view name;  // as in config tables and file names: "cache_offload"
  uint32_t iface_major;   // the host's interface version for this kind
  uint32_t iface_minor;
  // One row per minor, 0 .. iface_minor, oldest first (the table in plugin_kind.cpp).
  std::vector<KindVersion> versions;

  // The row of `minor` (<= iface_minor).
  const KindVersion& version(uint32_t minor) const { return versions.at(minor); }
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

// Why this host cannot load a plugin of `kind` built against interface major.minor (both
// versions named), or nullopt when it can.
std::optional<std::string> version_refusal(loom_plugin_kind kind, uint32_t major, uint32_t minor);

// Why a plugin of `kind` at `minor` (already accepted by version_refusal) cannot be used with the
// vtable it handed back, whose struct_size is `vtable_size`, or nullopt when it can.
std::optional<std::string> vtable_refusal(loom_plugin_kind kind, uint32_t minor, size_t vtable_size);

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
template <>
struct VtableKind<loom_speculator_vtable> {
  static constexpr loom_plugin_kind kKind = LOOM_KIND_SPECULATOR;
};

}  // namespace loom
