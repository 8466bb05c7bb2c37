#include "core/plugin/plugin_kind.hpp"

#include <cstddef>

#include "core/common/error.hpp"

namespace loom {

const std::vector<KindInfo>& all_kinds() {
  static const std::vector<KindInfo> kinds = {
      {LOOM_KIND_ATTENTION, "attention", LOOM_ATTENTION_IFACE_MAJOR, LOOM_ATTENTION_IFACE_MINOR,
       sizeof(loom_attention_vtable)},
      {LOOM_KIND_QUANTIZATION, "quantization", LOOM_QUANTIZATION_IFACE_MAJOR,
       LOOM_QUANTIZATION_IFACE_MINOR, sizeof(loom_quantization_vtable)},
      {LOOM_KIND_SCHEDULER, "scheduler", LOOM_SCHEDULER_IFACE_MAJOR, LOOM_SCHEDULER_IFACE_MINOR,
       sizeof(loom_scheduler_vtable)},
      // Interface 1.1 appended fork/take_block_copies: a 1.0 vtable (up to usage) still loads,
      // and callers check struct_size before reading the 1.1 entries.
      {LOOM_KIND_CACHE, "cache", LOOM_CACHE_IFACE_MAJOR, LOOM_CACHE_IFACE_MINOR,
       offsetof(loom_cache_vtable, fork)},
      {LOOM_KIND_CACHE_OFFLOAD, "cache_offload", LOOM_CACHE_OFFLOAD_IFACE_MAJOR,
       LOOM_CACHE_OFFLOAD_IFACE_MINOR, sizeof(loom_cache_offload_vtable)},
      {LOOM_KIND_SEMANTIC_CACHE, "semantic_cache", LOOM_SEMANTIC_CACHE_IFACE_MAJOR,
       LOOM_SEMANTIC_CACHE_IFACE_MINOR, sizeof(loom_semantic_cache_vtable)},
  };
  return kinds;
}

const KindInfo& kind_info(loom_plugin_kind kind) {
  for (const auto& info : all_kinds()) {
    if (info.kind == kind) return info;
  }
  throw Error("unknown plugin kind value " + std::to_string(static_cast<int>(kind)));
}

std::string kind_name(loom_plugin_kind kind) {
  for (const auto& info : all_kinds()) {
    if (info.kind == kind) return std::string(info.name);
  }
  return "unknown(" + std::to_string(static_cast<int>(kind)) + ")";
}

std::optional<loom_plugin_kind> find_kind(std::string_view name) {
  for (const auto& info : all_kinds()) {
    if (info.name == name) return info.kind;
  }
  return std::nullopt;
}

loom_plugin_kind parse_kind(std::string_view name) {
  if (auto kind = find_kind(name)) return *kind;
  std::string valid;
  for (const auto& info : all_kinds()) {
    if (!valid.empty()) valid += ", ";
    valid += info.name;
  }
  throw Error("unknown plugin kind '" + std::string(name) + "' (valid: " + valid + ")");
}

}  // namespace loom
