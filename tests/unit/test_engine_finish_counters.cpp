// A request is counted as ended before its final output leaves the engine: a client that reads
// /metrics as soon as it has its answer must find it there (success, abort or error alike), in
// the counters and in the gauges. The
// sink runs on the engine's thread, so reading stats() from it sees exactly what was counted then.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"

namespace loom {
namespace {

struct AtFinal {
  int64_t finished = 0;    // requests_finished
  int64_t e2e_count = 0;   // e2e_request_latency samples
  int64_t aborted = 0;
  int64_t failed = 0;
  int32_t running = 0;     // num_running
  std::optional<FinishReason> reason;
};

Config tiny_config() {
  return parse_config("[model]\npath = \"" + std::string(LOOM_TEST_DATA) +
                          "/stories260K.gguf\"\nname = \"s\"\n[runtime]\nthreads = 1\nseed = 3\n"
                          "[logging]\nlevel = \"warn\"\n[scheduler]\nplugin = \"fcfs\"\n"
                          "[cache]\nplugin = \"paged\"\nnum_blocks = 64\nblock_size = 16\n",
                      "finish_counters.toml");
}

class FinishCounters : public ::testing::Test {
 protected:
  Engine engine{tiny_config()};
  std::mutex mutex;
  std::condition_variable cv;
  std::vector<AtFinal> finals;

  uint64_t submit(int32_t max_tokens, int32_t first_token) {
    GenerateRequest r;
    r.prompt = {1, first_token, 40, 41};
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = max_tokens;
    r.sampling.ignore_eos = true;
    r.sink = [this](GenerationOutput&& o) {
      if (!o.finish) return;
      const EngineStats s = engine.stats();
      std::lock_guard lock(mutex);
      finals.push_back({s.requests_finished, static_cast<int64_t>(s.e2e_request_latency.count), s.slo.aborted, s.slo.failed, s.num_running, o.finish});
      cv.notify_all();
    };
    return engine.submit(std::move(r));
  }

  void wait_for(size_t n) {
    std::unique_lock lock(mutex);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finals.size() >= n; }));
  }
};

TEST_F(FinishCounters, EachFinalOutputFindsItsRequestAlreadyCounted) {
  constexpr int kRequests = 6;
  for (int i = 0; i < kRequests; ++i) submit(2 + i, 10 + i);
  wait_for(kRequests);
  engine.shutdown();
  ASSERT_EQ(finals.size(), static_cast<size_t>(kRequests));
  for (size_t k = 0; k < finals.size(); ++k) {
    SCOPED_TRACE("final output " + std::to_string(k));
    EXPECT_EQ(finals[k].reason, FinishReason::kLength);
    // The k-th final output is the (k+1)-th request to end: all of them are counted.
    EXPECT_EQ(finals[k].finished, static_cast<int64_t>(k) + 1);
    EXPECT_EQ(finals[k].e2e_count, static_cast<int64_t>(k) + 1);
    EXPECT_EQ(finals[k].aborted, 0);
    EXPECT_EQ(finals[k].failed, 0);
  }
  EXPECT_EQ(finals.back().running, 0) << "the gauges are published before the last output too";
}

TEST_F(FinishCounters, AnAbortIsCountedBeforeItsFinalOutput) {
  const uint64_t id = submit(400, 12);
  engine.abort(id);
  wait_for(1);
  engine.shutdown();
  ASSERT_EQ(finals.size(), 1u);
  EXPECT_EQ(finals[0].reason, FinishReason::kAbort);
  EXPECT_EQ(finals[0].aborted, 1);
  EXPECT_EQ(finals[0].finished, 0);
  EXPECT_EQ(finals[0].running, 0);
}

}  // namespace
}  // namespace loom
