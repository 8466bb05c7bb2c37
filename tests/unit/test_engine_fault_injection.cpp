// Deliverable 2 of the hardening issue, the scheduler path: a fault-injecting scheduler plugin
// (tests/abi/plugins/faulty_scheduler.cpp) refuses the 2nd request it is given, throws on
// its 4th schedule() call, schedules an id nobody submitted on its 8th and too many tokens on its
// 12th. The refused request fails alone; a failed schedule (the plugin instance's state is in
// doubt) ends the requests of that step, and the engine then serves the next requests as before, with no restart. The KV pool
// stays whole throughout (the paged cache checks its invariants after every step).
#include <gtest/gtest.h>

#include <chrono>
#include <thread>

#include <condition_variable>
#include <mutex>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"

namespace loom {
namespace {

#ifdef LOOM_ABI_PLUGIN_DIR
struct Result {
  FinishReason finish = FinishReason::kAbort;
  std::vector<int32_t> tokens;
  std::string error;
};

Result run_one(Engine& engine, int32_t max_tokens) {
  std::mutex m;
  std::condition_variable cv;
  Result r;
  bool done = false;
  GenerateRequest req;
  req.prompt = engine.tokenizer().encode("Once upon a time", true);
  req.sampling.temperature = 0.0f;
  req.sampling.max_tokens = max_tokens;
  req.sink = [&](GenerationOutput&& out) {
    std::lock_guard lock(m);
    r.tokens.insert(r.tokens.end(), out.token_ids.begin(), out.token_ids.end());
    if (out.finish) {
      r.finish = *out.finish;
      r.error = out.error;
      done = true;
      cv.notify_all();
    }
  };
  engine.submit(std::move(req));
  std::unique_lock lock(m);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(30), [&] { return done; }));
  return r;
}

TEST(EngineFaultInjection, SchedulerFaultsFailTheirRequestsAndTheEngineGoesOn) {
  const std::string toml = "[model]\npath = \"" + std::string(LOOM_TEST_DATA) +
                           "/stories260K.gguf\"\n[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"off\"\n"
                           "[scheduler]\nplugin = \"faults\"\npath = \"" LOOM_ABI_PLUGIN_DIR
                           "/libloom-scheduler-faults.so\"\n"
                           "[cache]\nplugin = \"paged\"\nnum_blocks = 16\nblock_size = 16\ncheck_invariants = true\n"
                           "enable_prefix_caching = false\n";  // the plugin computes whole prompts
  Engine engine(parse_config(toml, "faults.toml"));
  // schedule() calls 1-2: prefill + first token, then the second token.
  const Result a = run_one(engine, 2);
  EXPECT_EQ(a.finish, FinishReason::kLength) << a.error;
  ASSERT_EQ(a.tokens.size(), 2u);
  // add_request refuses the 2nd request: it alone fails, before any step.
  const Result b = run_one(engine, 2);
  EXPECT_EQ(b.finish, FinishReason::kError);
  // Call 3 prefills this one, call 4 throws: the step's requests end with the plugin's message.
  const Result c = run_one(engine, 8);
  EXPECT_EQ(c.finish, FinishReason::kError);
  EXPECT_NE(c.error.find("injected fault: schedule call 4"), std::string::npos) << c.error;
  // Calls 5-6: served as before the fault, the same greedy tokens.
  const Result d = run_one(engine, 2);
  EXPECT_EQ(d.finish, FinishReason::kLength);
  EXPECT_EQ(d.tokens, a.tokens);
  // Call 8 schedules an unknown id (a bad value): refused by the host, the step's request fails.
  const Result e = run_one(engine, 4);
  EXPECT_EQ(e.finish, FinishReason::kError);
  EXPECT_NE(e.error.find("unknown request 987654321"), std::string::npos) << e.error;
  const Result f = run_one(engine, 2);
  EXPECT_EQ(f.finish, FinishReason::kLength);
  EXPECT_EQ(f.tokens, a.tokens);
  // Call 11 prefills, call 12 schedules 5 tokens more than the request has left (a bad value):
  // refused by the host for that request, before the batch would read past its tokens.
  const Result g = run_one(engine, 4);
  EXPECT_EQ(g.finish, FinishReason::kError);
  EXPECT_NE(g.error.find("with 0 cached tokens and 6 new ones, but only 1 of its tokens are left"), std::string::npos)
      << g.error;
  const Result h = run_one(engine, 2);
  EXPECT_EQ(h.finish, FinishReason::kLength);
  EXPECT_EQ(h.tokens, a.tokens);
  // The last output reaches the sink before the engine frees the request's blocks and publishes
  // its stats: wait for that publish.
  EngineStats s = engine.stats();
  for (int i = 0; i < 5000 && s.kv_used_blocks != 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s = engine.stats();
  }
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
}
#endif

}  // namespace
}  // namespace loom
