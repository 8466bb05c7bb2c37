#include "core/plugin/plugin_host.hpp"

#include "loom/sdk_core.hpp"

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "core/plugin/plugin_kind.hpp"

namespace loom {
namespace {

// What one candidate file scored (a refused one keeps its reason).
struct Scored {
  OpenedPlugin opened;
  std::unique_ptr<HostApi> host;
  int32_t score = 0;
  std::string reason;
};

}  // namespace

PluginHost::PluginHost(ThreadPool& pool, const std::vector<std::string>& dirs)
    : pool_(pool), loader_(dirs) {}

std::unique_ptr<LoadedPlugin> PluginHost::create(const PluginSpec& spec,
                                                 const void* create_args) const {
  const std::string kind = kind_name(spec.kind);

  // Several files of one name along the search path are variants: the highest score wins, a
  // score of 0 means "cannot run here" and skips that file.
  std::vector<Scored> refused;
  Scored best;
  for (const auto& file : loader_.locate(spec)) {
    Scored s;
    s.opened = loader_.open(spec.kind, spec.name, file);
    s.host = std::make_unique<HostApi>(pool_, spec.kind, spec.name);
    s.score = 1;
    if (s.opened.desc->score != nullptr) {
      ErrorBuffer reason;
      loom_error_buf buf = reason.buf();
      s.score = s.opened.desc->score(s.host->api(), &buf);
      s.reason = reason.str();
    }
    if (s.score <= 0) {
      LOOM_LOG_WARN("skipping {}", plugin_refusal(spec.kind, spec.name, s.opened.file,
                                                  "refused to run here: " + s.reason));
      refused.push_back(std::move(s));
    } else if (s.score > best.score) {
      best = std::move(s);
    }
  }
  if (best.score <= 0) {
    std::string files;
    std::string reasons;
    for (const auto& r : refused) {
      files += (files.empty() ? "" : ", ") + r.opened.file;
      reasons += (reasons.empty() ? "" : "; ") +
                 (refused.size() > 1 ? r.opened.file + ": " : std::string()) +
                 (r.reason.empty() ? "no reason given" : r.reason);
    }
    throw Error(
        plugin_refusal(spec.kind, spec.name, files, "refused to run on this machine: " + reasons),
        LOOM_ERR_UNSUPPORTED);
  }

  const loom_plugin_desc& desc = *best.opened.desc;
  const std::string file = best.opened.file;  // a copy: best.opened moves into the instance
  const std::string config = spec.config_json.empty() ? "{}" : spec.config_json;
  if (desc.validate != nullptr) {
    ErrorBuffer err;
    loom_error_buf buf = err.buf();
    const loom_status status = desc.validate(config.c_str(), &buf);
    if (status != LOOM_OK) {
      throw Error(plugin_refusal(spec.kind, spec.name, file, "invalid config: " + err.str()),
                  LOOM_ERR_CONFIG);
    }
  }

  void* self = nullptr;
  const void* vtable = nullptr;
  ErrorBuffer err;
  loom_error_buf buf = err.buf();
  const loom_status status =
      desc.create(best.host->api(), create_args, config.c_str(), &self, &vtable, &buf);
  if (status != LOOM_OK) {
    if (self != nullptr) desc.destroy(self);
    throw Error(plugin_refusal(spec.kind, spec.name, file,
                               "create failed (" + std::string(sdk::status_name(status)) + "): " + err.str()),
                status == LOOM_ERR_CONFIG ? LOOM_ERR_CONFIG : LOOM_ERR_UNSUPPORTED);
  }
  // From here the instance is owned, so any refusal below destroys it.
  auto plugin =
      std::make_unique<LoadedPlugin>(std::move(best.opened), std::move(best.host), self, vtable);
  if (self == nullptr || vtable == nullptr) {
    throw Error(plugin_refusal(spec.kind, spec.name, file,
                               "create returned LOOM_OK without an instance or a vtable"),
                LOOM_ERR_INTERNAL);
  }
  // A vtable as long as the plugin's minor says; members past it read as NULL (sdk::present).
  const uint32_t vtable_size = *static_cast<const uint32_t*>(vtable);  // struct_size comes first
  if (auto why = vtable_refusal(spec.kind, desc.iface_minor, vtable_size)) {
    throw Error(plugin_refusal(spec.kind, spec.name, file, *why), LOOM_ERR_UNSUPPORTED);
  }
  LOOM_LOG_INFO("plugin {} '{}' {} loaded from {}", kind, spec.name, plugin->version(), file);
  return plugin;
}

std::vector<PluginInfo> PluginHost::list(loom_plugin_kind kind) const {
  const size_t prefix_len = PluginLoader::file_name(kind, "").size() - 3;  // "libloom-<kind>-"
  std::vector<PluginInfo> out;
  for (const auto& file : loader_.files(kind)) {
    PluginInfo info;
    info.kind = kind;
    info.file = file.string();
    const std::string fname = file.filename().string();
    info.name = fname.substr(prefix_len, fname.size() - prefix_len - 3);
    try {
      const OpenedPlugin opened = loader_.open(kind, info.name, file);
      info.version = opened.desc->version != nullptr ? opened.desc->version : "";
      info.description = opened.desc->description != nullptr ? opened.desc->description : "";
    } catch (const Error& e) {
      info.problem = e.what();
    }
    out.push_back(std::move(info));
  }
  return out;
}

}  // namespace loom
