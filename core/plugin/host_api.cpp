#include "core/plugin/host_api.hpp"

#include "core/common/logging.hpp"
#include "core/plugin/cuda_devices.hpp"
#include "core/plugin/plugin_kind.hpp"

namespace loom {

HostApi::HostApi(ThreadPool& pool, loom_plugin_kind kind, std::string name)
    : pool_(pool), prefix_("[" + kind_name(kind) + "/" + name + "]") {
  api_ = loom_host_api{};
  api_.struct_size = sizeof(loom_host_api);
  api_.abi_version = LOOM_ABI_VERSION;
  api_.host_ctx = this;
  api_.log = &HostApi::log;
  api_.parallel_for = &HostApi::parallel_for;
  api_.num_threads = pool.num_threads();
  api_.num_cuda_devices = visible_cuda_devices();
}

void HostApi::log(void* host_ctx, loom_log_level level, const char* message) {
  const auto* self = static_cast<const HostApi*>(host_ctx);
  const char* text = message != nullptr ? message : "";
  auto& out = logger();
  switch (level) {
    case LOOM_LOG_TRACE:
      out.trace("{} {}", self->prefix_, text);
      break;
    case LOOM_LOG_DEBUG:
      out.debug("{} {}", self->prefix_, text);
      break;
    case LOOM_LOG_INFO:
      out.info("{} {}", self->prefix_, text);
      break;
    case LOOM_LOG_WARN:
      out.warn("{} {}", self->prefix_, text);
      break;
    default:
      out.error("{} {}", self->prefix_, text);
      break;
  }
}

void HostApi::parallel_for(void* host_ctx, int64_t n_items, loom_parallel_fn fn, void* ctx) {
  auto* self = static_cast<HostApi*>(host_ctx);
  if (n_items <= 0 || fn == nullptr) return;
  self->pool_.parallel_for(n_items, [fn, ctx](int64_t begin, int64_t end, int32_t thread) {
    fn(ctx, begin, end, thread);
  });
}

}  // namespace loom
