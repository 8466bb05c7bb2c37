// The loom_host_api the core gives each plugin: fields, logging with the "[kind/name]" prefix
// into the process logger, and parallel_for on the shared pool (also through sdk::Host).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <atomic>
#include <sstream>
#include <stdexcept>
#include <vector>

#include "core/common/log_sinks.hpp"
#include "core/common/logging.hpp"
#include "core/plugin/host_api.hpp"
#include "loom/sdk_core.hpp"

namespace loom {
namespace {

TEST(HostApi, Fields) {
  ThreadPool pool(3);
  HostApi host(pool, LOOM_KIND_CACHE, "paged");
  const loom_host_api* api = host.api();
  EXPECT_EQ(api->struct_size, sizeof(loom_host_api));
  EXPECT_EQ(api->abi_version, static_cast<uint32_t>(LOOM_ABI_VERSION));
  EXPECT_EQ(api->num_threads, 3);
  EXPECT_EQ(api->num_cuda_devices, 0);  // CPU build
  EXPECT_EQ(api->host_ctx, &host);
  EXPECT_EQ(host.prefix(), "[cache/paged]");
}

TEST(HostApi, LogGoesToTheProcessLoggerWithThePrefix) {
  ThreadPool pool(1);
  HostApi host(pool, LOOM_KIND_SEMANTIC_CACHE, "exact");
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%l %v");
  add_log_sink(sink);
  const auto old_level = logger().level();
  logger().set_level(spdlog::level::debug);
  host.api()->log(host.api()->host_ctx, LOOM_LOG_WARN, "store full");
  host.api()->log(host.api()->host_ctx, LOOM_LOG_DEBUG, nullptr);
  logger().set_level(old_level);
  remove_log_sink(sink);
  EXPECT_EQ(out.str(),
            "warning [semantic_cache/exact] store full\ndebug [semantic_cache/exact] \n");
}

TEST(HostApi, ParallelForCoversEveryItemOnce) {
  ThreadPool pool(4);
  HostApi host(pool, LOOM_KIND_ATTENTION, "flash_cpu");
  struct Ctx {
    std::vector<std::atomic<int>> hits = std::vector<std::atomic<int>>(1000);
    std::atomic<int> bad_thread{0};
  } ctx;
  host.api()->parallel_for(
      host.api()->host_ctx, 1000,
      [](void* raw, int64_t begin, int64_t end, int32_t thread) {
        auto* c = static_cast<Ctx*>(raw);
        if (thread < 0 || thread >= 4) ++c->bad_thread;
        for (int64_t i = begin; i < end; ++i) ++c->hits[static_cast<size_t>(i)];
      },
      &ctx);
  for (const auto& h : ctx.hits) ASSERT_EQ(h.load(), 1);
  EXPECT_EQ(ctx.bad_thread.load(), 0);
}

TEST(HostApi, SdkHostOverTheRealApi) {
  ThreadPool pool(3);
  HostApi api(pool, LOOM_KIND_QUANTIZATION, "int8");
  const sdk::Host host(api.api());
  EXPECT_EQ(host.num_threads(), 3);
  std::vector<int64_t> sums(3, 0);
  host.parallel_for(101, [&](int64_t b, int64_t e, int32_t t) {
    for (int64_t i = b; i < e; ++i) sums[static_cast<size_t>(t)] += i;
  });
  EXPECT_EQ(sums[0] + sums[1] + sums[2], 5050);
  // An exception on a worker comes back to the caller, not through the pool.
  EXPECT_THROW(host.parallel_for(90,
                                 [](int64_t b, int64_t, int32_t) {
                                   if (b > 0) throw std::runtime_error("worker failed");
                                 }),
               std::runtime_error);
  // The pool is still usable afterwards.
  std::atomic<int64_t> n{0};
  host.parallel_for(10, [&](int64_t b, int64_t e) { n += e - b; });
  EXPECT_EQ(n.load(), 10);
}

}  // namespace
}  // namespace loom
