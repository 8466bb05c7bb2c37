// The loom_host_api one plugin instance is given: logging into the process logger with a
// "[<kind>/<name>]" prefix, parallel_for on the shared thread pool, thread and device counts.
#pragma once

#include <string>

#include "core/common/thread_pool.hpp"
#include "loom/plugin.h"

namespace loom {

class HostApi {
 public:
  // The api stays valid (and at a fixed address) as long as this object lives.
  HostApi(ThreadPool& pool, loom_plugin_kind kind, std::string name);
  HostApi(const HostApi&) = delete;
  HostApi& operator=(const HostApi&) = delete;

  const loom_host_api* api() const { return &api_; }
  const std::string& prefix() const { return prefix_; }

 private:
  static void log(void* host_ctx, loom_log_level level, const char* message);
  static void parallel_for(void* host_ctx, int64_t n_items, loom_parallel_fn fn, void* ctx);

  ThreadPool& pool_;
  std::string prefix_;  // "[scheduler/fcfs]"
  loom_host_api api_;
};

}  // namespace loom
