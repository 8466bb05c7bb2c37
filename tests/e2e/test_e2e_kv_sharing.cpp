// n > 1 at the engine: the choices share the prompt's KV blocks (a forking cache holds far
// fewer blocks at the peak than n separate requests), aborting the request ends every choice and
// frees everything, and the prefix cache's miss reasons add up to its queries.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

std::string paged(int block_size) {
  return "[scheduler]\nplugin = \"fcfs\"\n[cache]\nplugin = \"paged\"\nkv_memory = \"16MiB\"\nblock_size = " +
         std::to_string(block_size) + "\n";
}

std::vector<int32_t> prompt_of(int n, int first = 300) {
  std::vector<int32_t> ids = {1};
  for (int i = 1; i < n; ++i) ids.push_back(first + i % 150);
  return ids;
}

// Everything the sinks of some requests saw: final outputs per (request, choice), and the most
// KV blocks in use at any output.
class Recorder {
 public:
  explicit Recorder(Engine& engine) : engine_(engine) {}

  OutputSink sink(uint64_t tag) {
    return [this, tag](GenerationOutput&& out) {
      const int32_t used = engine_.stats().kv_used_blocks;  // engine thread: stats are current
      std::lock_guard lock(mutex_);
      peak_used_ = std::max(peak_used_, used);
      ++outputs_[{tag, out.index}];
      if (out.finish) finals_[{tag, out.index}].push_back(*out.finish);
    };
  }
  size_t num_finished() const {
    std::lock_guard lock(mutex_);
    return finals_.size();
  }
  size_t num_choices_seen() const {
    std::lock_guard lock(mutex_);
    return outputs_.size();
  }
  int32_t peak_used() const {
    std::lock_guard lock(mutex_);
    return peak_used_;
  }
  std::map<std::pair<uint64_t, int32_t>, std::vector<FinishReason>> finals() const {
    std::lock_guard lock(mutex_);
    return finals_;
  }

 private:
  Engine& engine_;
  mutable std::mutex mutex_;
  int32_t peak_used_ = 0;
  std::map<std::pair<uint64_t, int32_t>, int> outputs_;
  std::map<std::pair<uint64_t, int32_t>, std::vector<FinishReason>> finals_;
};

GenerateRequest sampled(std::vector<int32_t> prompt, int32_t max_tokens, int32_t n, OutputSink sink) {
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 1.0f;
  r.sampling.seed = 11;
  r.sampling.max_tokens = max_tokens;
  r.sampling.ignore_eos = true;
  r.n = n;
  r.sink = std::move(sink);
  return r;
}

bool idle(Engine& engine) {
  const EngineStats s = engine.stats();
  return s.num_running == 0 && s.num_waiting == 0 && s.kv_num_seqs == 0;
}

TEST(E2eKvSharing, FourChoicesHoldFarFewerBlocksThanFourRequests) {
  LiveServer server(demo_config(paged(16)));
  Engine& engine = server.engine();
  const std::vector<int32_t> prompt = prompt_of(100);  // 6 full blocks of 16 and a partial one

  Recorder shared(engine);
  engine.submit(sampled(prompt, 8, 4, shared.sink(0)));
  ASSERT_TRUE(wait_for([&] { return shared.num_finished() == 4; }));
  ASSERT_TRUE(wait_for([&] { return idle(engine); }));

  // Four separate requests, each under its own cache_salt so no prefix can be reused either.
  Recorder separate(engine);
  for (uint64_t i = 0; i < 4; ++i) {
    GenerateRequest r = sampled(prompt, 8, 1, separate.sink(i));
    r.cache_salt = 100 + i;
    engine.submit(std::move(r));
  }
  ASSERT_TRUE(wait_for([&] { return separate.num_finished() == 4; }));

  // 4 x ceil(108 / 16) = 28 blocks apart; shared: 7 prompt blocks + one copied tail block and
  // what decoding adds per choice.
  RecordProperty("peak_blocks_shared", shared.peak_used());
  RecordProperty("peak_blocks_separate", separate.peak_used());
  EXPECT_GE(separate.peak_used(), 28);
  EXPECT_LE(shared.peak_used(), 12);
  EXPECT_LE(2 * shared.peak_used(), separate.peak_used());
}

// A pool too small for the four choices together: forked children get preempted, recompute and
// copy blocks on write, and every choice still equals its single seeded request.
class E2eKvSharingPreempts : public ::testing::TestWithParam<std::string> {};

TEST_P(E2eKvSharingPreempts, ChoicesEqualSingleRequests) {
  LiveServer server(demo_config(
      "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 8\nmax_num_batched_tokens = 64\n"
      "[cache]\nplugin = \"" + GetParam() + "\"\nnum_blocks = 12\nblock_size = 4\ncheck_invariants = true\n"));
  nlohmann::json prompt = nlohmann::json::array();
  for (int32_t id : prompt_of(18)) prompt.push_back(id);
  const nlohmann::json base = {{"prompt", prompt}, {"max_tokens", 22}, {"temperature", 1.0},
                               {"ignore_eos", true}};
  nlohmann::json multi = base;
  multi["n"] = 4;
  multi["seed"] = 90;
  const HttpResponse r = server.post("/v1/completions", multi);
  ASSERT_EQ(r.status, 200u) << r.body;
  const nlohmann::json j = nlohmann::json::parse(r.body);
  EXPECT_GT(server.metrics().at("loom:num_preemptions_total"), 0) << "the small pool never preempted";
  for (int i = 0; i < 4; ++i) {
    nlohmann::json one = base;
    one["seed"] = 90 + i;
    const HttpResponse s = server.post("/v1/completions", one);
    ASSERT_EQ(s.status, 200u) << s.body;
    EXPECT_EQ(j["choices"][i]["text"], nlohmann::json::parse(s.body)["choices"][0]["text"]) << "choice " << i;
  }
  EXPECT_TRUE(wait_for([&] { return idle(server.engine()); }));
}

INSTANTIATE_TEST_SUITE_P(Caches, E2eKvSharingPreempts, ::testing::Values("paged", "radix"));

TEST(E2eKvSharing, AbortEndsEveryChoiceAndFreesEverything) {
  LiveServer server(demo_config(paged(4)));
  Engine& engine = server.engine();
  Recorder rec(engine);
  // Aborted while running: every choice has produced output (so the forks happened).
  const uint64_t running = engine.submit(sampled(prompt_of(10), 400, 3, rec.sink(0)));
  ASSERT_TRUE(wait_for([&] { return rec.num_choices_seen() == 3; }));
  engine.abort(running);
  // Aborted at once: the choices not forked yet still end.
  const uint64_t queued = engine.submit(sampled(prompt_of(10), 400, 3, rec.sink(1)));
  engine.abort(queued);
  ASSERT_TRUE(wait_for([&] { return rec.num_finished() == 6; }));
  for (const auto& [key, reasons] : rec.finals()) {
    ASSERT_EQ(reasons.size(), 1u) << "request " << key.first << " choice " << key.second;
    EXPECT_EQ(reasons[0], FinishReason::kAbort) << "request " << key.first << " choice " << key.second;
  }
  EXPECT_TRUE(wait_for([&] { return idle(engine); }));
  EXPECT_EQ(engine.stats().kv_used_blocks, 0);
}

TEST(E2eKvSharing, PrefixMissReasonsAddUpToTheQueries) {
  LiveServer server(demo_config(paged(4)));
  Engine& engine = server.engine();
  Recorder rec(engine);
  auto run = [&](std::vector<int32_t> prompt, uint64_t salt) {
    const size_t before = rec.num_finished();
    GenerateRequest r = sampled(std::move(prompt), 2, 1, rec.sink(before));
    r.cache_salt = salt;
    engine.submit(std::move(r));
    EXPECT_TRUE(wait_for([&] { return rec.num_finished() == before + 1 && idle(engine); }));
    return engine.stats();
  };
  auto misses = [](const EngineStats& s) {
    return s.prefix_cache_miss_no_match + s.prefix_cache_miss_partial_block + s.prefix_cache_miss_evicted +
           s.prefix_cache_miss_salt_mismatch;
  };
  const EngineStats first = run(prompt_of(14), 0);  // nothing cached yet
  EXPECT_GT(first.prefix_cache_miss_no_match, 0);
  EXPECT_EQ(first.prefix_cache_miss_salt_mismatch, 0);
  EXPECT_EQ(first.prefix_cache_hits + misses(first), first.prefix_cache_queries);

  const EngineStats salted = run(prompt_of(14), 77);  // cached, but under no salt
  EXPECT_GT(salted.prefix_cache_miss_salt_mismatch, 0);
  EXPECT_EQ(salted.prefix_cache_hits + misses(salted), salted.prefix_cache_queries);

  const EngineStats tiny = run(prompt_of(3, 200), 0);  // shorter than one block
  EXPECT_GT(tiny.prefix_cache_miss_partial_block, salted.prefix_cache_miss_partial_block);
  EXPECT_EQ(tiny.prefix_cache_hits + misses(tiny), tiny.prefix_cache_queries);

  // /metrics shows them under the reason label.
  const HttpResponse m = server.client().get("/metrics");
  EXPECT_NE(m.body.find("loom:prefix_cache_misses_total{model_name=\"stories260K\",reason=\"salt_mismatch\"} " +
                        std::to_string(tiny.prefix_cache_miss_salt_mismatch)),
            std::string::npos)
      << m.body;
}

}  // namespace
}  // namespace loom::test
