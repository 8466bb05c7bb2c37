#include "core/plugin/plugin_kind.hpp"

#include <cstddef>

#include "core/common/error.hpp"

namespace loom {

namespace {

// The end of a struct up to and including `member`: the size of the struct at the minor version
// whose last member that was (for a vtable of pointers, where there is no tail padding; for a
// struct with padding, the offset of the next minor's first member is its old sizeof).
#define LOOM_SIZE_THROUGH(Struct, member) (offsetof(Struct, member) + sizeof(Struct::member))

}  // namespace

// The version table. A kind's interface grows by appending members to its vtable (and create
// args) together with a minor bump; supporting the new minor is then ONE new row here, e.g.
//   {2, sizeof(loom_scheduler_vtable), sizeof(loom_scheduler_create_args)},
// with the previous newest row rewritten from sizeof(...) to LOOM_SIZE_THROUGH(..., its last
// member), so every older minor keeps the exact sizes its plugins were built with. Nothing else in
// the loader changes: the refusals below and every `sdk::present` read follow from the rows.
const std::vector<KindInfo>& all_kinds() {
  static const std::vector<KindInfo> kinds = {
      {LOOM_KIND_ATTENTION, "attention", LOOM_ATTENTION_IFACE_MAJOR, LOOM_ATTENTION_IFACE_MINOR,
       {
           {0, LOOM_SIZE_THROUGH(loom_attention_vtable, forward), sizeof(loom_attention_create_args)},
           {1, LOOM_SIZE_THROUGH(loom_attention_vtable, forward_rope_k),
            sizeof(loom_attention_create_args)},                                      // + forward_rope_k
           {2, sizeof(loom_attention_vtable), sizeof(loom_attention_create_args)},  // + forward_window
       }},
      {LOOM_KIND_QUANTIZATION, "quantization", LOOM_QUANTIZATION_IFACE_MAJOR, LOOM_QUANTIZATION_IFACE_MINOR,
       {
           {0, LOOM_SIZE_THROUGH(loom_quantization_vtable, release_weight), sizeof(loom_quantization_create_args)},
           {1, LOOM_SIZE_THROUGH(loom_quantization_vtable, prepare_weight_info),
            sizeof(loom_quantization_create_args)},
           {2, LOOM_SIZE_THROUGH(loom_quantization_vtable, linear_group),
            sizeof(loom_quantization_create_args)},  // + linear_group
           {3, LOOM_SIZE_THROUGH(loom_quantization_vtable, reads), sizeof(loom_quantization_create_args)},  // + reads
           {4, LOOM_SIZE_THROUGH(loom_quantization_vtable, linear_experts),
            sizeof(loom_quantization_create_args)},                                     // + linear_experts
           {5, sizeof(loom_quantization_vtable), sizeof(loom_quantization_create_args)},  // + linear_top_k
       }},
      {LOOM_KIND_SCHEDULER, "scheduler", LOOM_SCHEDULER_IFACE_MAJOR, LOOM_SCHEDULER_IFACE_MINOR,
       {
           {0, sizeof(loom_scheduler_vtable), sizeof(loom_scheduler_create_args)},
           // 1.1 grows only host-owned structs (loom_sched_context: swap_available, preempt;
           // loom_sched_output: rejected_reasons, reason_size): the plugin's sizes stay.
           {1, sizeof(loom_scheduler_vtable), sizeof(loom_scheduler_create_args)},
           // 1.2 grows the context (predicted_step_us, swap_us_per_token) and the request view
           // (SLO targets, tenant), which the host fills to the plugin's struct_size.
           {2, sizeof(loom_scheduler_vtable), sizeof(loom_scheduler_create_args)},
       }},
      {LOOM_KIND_CACHE, "cache", LOOM_CACHE_IFACE_MAJOR, LOOM_CACHE_IFACE_MINOR,
       {
           // The create args of 1.0/1.1 end at max_model_len, padded to 8 bytes as the int64 member
           // before it aligns the struct: sizeof at that minor is where 1.2's member starts.
           {0, LOOM_SIZE_THROUGH(loom_cache_vtable, usage), offsetof(loom_cache_create_args, bytes_per_block_extra)},
           // + fork, take_block_copies (and the usage struct's miss counters)
           {1, LOOM_SIZE_THROUGH(loom_cache_vtable, take_block_copies),
            offsetof(loom_cache_create_args, bytes_per_block_extra)},
           {2, LOOM_SIZE_THROUGH(loom_cache_vtable, take_block_copies),
            LOOM_SIZE_THROUGH(loom_cache_create_args, bytes_per_block_extra)},  // + bytes_per_block_extra
           {3, LOOM_SIZE_THROUGH(loom_cache_vtable, trim),
            LOOM_SIZE_THROUGH(loom_cache_create_args, bytes_per_block_extra)},  // + trim
           // + take_evicted, block_hashes, evict_cached (prefix spill and restore through the tiers)
           {4, LOOM_SIZE_THROUGH(loom_cache_vtable, evict_cached),
            LOOM_SIZE_THROUGH(loom_cache_create_args, bytes_per_block_extra)},
           // + group_block_table; the create args + n_groups, group_windows (block-table groups)
           {5, LOOM_SIZE_THROUGH(loom_cache_vtable, group_block_table), sizeof(loom_cache_create_args)},
           // + group_block_hashes (a tier restores every group's prefix blocks)
           {6, sizeof(loom_cache_vtable), sizeof(loom_cache_create_args)},
       }},
      {LOOM_KIND_CACHE_OFFLOAD, "cache_offload", LOOM_CACHE_OFFLOAD_IFACE_MAJOR, LOOM_CACHE_OFFLOAD_IFACE_MINOR,
       {
           {0, LOOM_SIZE_THROUGH(loom_cache_offload_vtable, usage),
            LOOM_SIZE_THROUGH(loom_cache_offload_create_args, copy)},
           // + save_entry; the create args + model_fingerprint and the KV layout
           {1, sizeof(loom_cache_offload_vtable), sizeof(loom_cache_offload_create_args)},
       }},
      {LOOM_KIND_SEMANTIC_CACHE, "semantic_cache", LOOM_SEMANTIC_CACHE_IFACE_MAJOR, LOOM_SEMANTIC_CACHE_IFACE_MINOR,
       {
           {0, LOOM_SIZE_THROUGH(loom_semantic_cache_vtable, store), 0},  // no create args
           // + needs_embedding, stats; the query and answer grow (host-filled, struct_size says)
           {1, sizeof(loom_semantic_cache_vtable), 0},
           // + create args: the host's embed callback (a calibration set is embedded at create)
           {2, sizeof(loom_semantic_cache_vtable), sizeof(loom_semantic_cache_create_args)},
       }},
      {LOOM_KIND_SPECULATOR, "speculator", LOOM_SPECULATOR_IFACE_MAJOR, LOOM_SPECULATOR_IFACE_MINOR,
       {
           {0, sizeof(loom_speculator_vtable), offsetof(loom_speculator_create_args, draft_models)},
           {1, sizeof(loom_speculator_vtable), sizeof(loom_speculator_create_args)},  // + draft_models
       }},
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

namespace {
std::string version_text(uint32_t major, uint32_t minor) {
  return std::to_string(major) + "." + std::to_string(minor);
}
}  // namespace

std::optional<std::string> version_refusal(loom_plugin_kind kind, uint32_t major, uint32_t minor) {
  const KindInfo& info = kind_info(kind);
  const std::string plugin = version_text(major, minor);
  const std::string host = version_text(info.iface_major, info.iface_minor);
  if (major != info.iface_major) {
    return kind_name(kind) + " interface " + plugin + " is incompatible with the host's " + host + " (major " +
           std::to_string(major) + " != " + std::to_string(info.iface_major) + ")";
  }
  if (minor > info.iface_minor) {
    return kind_name(kind) + " interface " + plugin + " is newer than the host's " + host + " (minor " +
           std::to_string(minor) + " > " + std::to_string(info.iface_minor) + "); update the host";
  }
  return std::nullopt;
}

std::optional<std::string> vtable_refusal(loom_plugin_kind kind, uint32_t minor, size_t vtable_size) {
  const KindInfo& info = kind_info(kind);
  const size_t needed = info.version(minor).vtable_size;
  if (vtable_size >= needed) return std::nullopt;
  return "vtable struct_size " + std::to_string(vtable_size) + " is smaller than the " + std::to_string(needed) +
         " bytes of a " + kind_name(kind) + " " + version_text(info.iface_major, minor) + " vtable";
}

}  // namespace loom
