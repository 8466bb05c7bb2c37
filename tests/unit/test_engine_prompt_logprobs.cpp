// Prompt logprobs and logits processors under pressure: 32 requests scoring their prompts (half
// with penalties and a bias) on a KV pool that holds only a few, with chunked prefill, a shared
// prefix for the prefix cache to offer, and preemption by recompute or through the host tier.
// Each request must give exactly what it gives alone on a roomy pool: its P - 1 prompt scores
// (bit for bit: the f32 CPU path is batch- and chunk-invariant) and its tokens.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"

namespace loom {
namespace {

constexpr int kNumRequests = 32;

struct Result {
  std::vector<int32_t> tokens;
  std::vector<RowLogprobs> prompt_logprobs;
  int prompt_outputs = 0;  // outputs that carried prompt logprobs (must be exactly one)
  std::string error;
};

std::vector<std::vector<int32_t>> prompts() {
  std::mt19937 rng(22);
  std::vector<int32_t> shared;
  for (int i = 0; i < 20; ++i) shared.push_back(3 + static_cast<int32_t>(rng() % 509));
  std::vector<std::vector<int32_t>> out;
  for (int i = 0; i < kNumRequests; ++i) {
    std::vector<int32_t> p{1};
    if (i % 2 == 0) p.insert(p.end(), shared.begin(), shared.end());  // the prefix cache could serve these
    const int len = 2 + static_cast<int>(rng() % 38);
    while (static_cast<int>(p.size()) < len + (i % 2 == 0 ? 20 : 0)) p.push_back(3 + static_cast<int32_t>(rng() % 509));
    out.push_back(std::move(p));
  }
  return out;
}

std::vector<Result> run(const std::string& tables, bool concurrent, int64_t* preemptions = nullptr) {
  const std::string toml = "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\nname = \"s\"\n" +
                           "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"warn\"\n" + tables;
  Engine engine(parse_config(toml, "prompt_logprobs.toml"));
  const auto all = prompts();
  std::vector<Result> results(all.size());
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  auto submit = [&](size_t i) {
    GenerateRequest r;
    r.prompt = all[i];
    r.sampling.temperature = 0.0f;
    r.sampling.max_tokens = 12;
    r.sampling.ignore_eos = true;
    r.sampling.prompt_logprobs = 2;
    if (i % 2 == 1) {
      r.sampling.processing.frequency_penalty = 0.75f;
      r.sampling.processing.presence_penalty = 0.5f;
      r.sampling.processing.repetition_penalty = 1.3f;
      r.sampling.processing.logit_bias = {{static_cast<int32_t>(10 + i), 3.0f}};
    }
    r.sink = [&, i](GenerationOutput&& o) {
      std::lock_guard lock(mutex);
      Result& res = results[i];
      res.tokens.insert(res.tokens.end(), o.token_ids.begin(), o.token_ids.end());
      if (!o.prompt_logprobs.empty()) {
        ++res.prompt_outputs;
        res.prompt_logprobs = std::move(o.prompt_logprobs);
      }
      if (o.finish) {
        if (*o.finish == FinishReason::kError) res.error = o.error.empty() ? "error" : o.error;
        ++done;
        cv.notify_all();
      }
    };
    engine.submit(std::move(r));
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (size_t i = 0; i < all.size(); ++i) {
    submit(i);
    if (concurrent) continue;
    std::unique_lock lock(mutex);
    cv.wait_until(lock, deadline, [&] { return done == static_cast<int>(i) + 1; });
  }
  {
    std::unique_lock lock(mutex);
    cv.wait_until(lock, deadline, [&] { return done == kNumRequests; });
    EXPECT_EQ(done, kNumRequests);
  }
  engine.shutdown();
  if (preemptions) *preemptions = engine.stats().num_preemptions;
  return results;
}

const std::vector<Result>& alone() {
  static const std::vector<Result> r =
      run("[scheduler]\nplugin = \"fcfs\"\n[cache]\nplugin = \"paged\"\nnum_blocks = 64\nblock_size = 16\n"
          "enable_prefix_caching = false\n[attention]\nplugin = \"naive\"\n",
          /*concurrent=*/false);
  return r;
}

void expect_same(const std::vector<Result>& got) {
  const auto all = prompts();
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("request " + std::to_string(i));
    const Result& want = alone()[i];
    ASSERT_EQ(want.error, "");
    ASSERT_EQ(want.prompt_logprobs.size(), all[i].size() - 1);
    EXPECT_EQ(got[i].error, "");
    EXPECT_EQ(got[i].prompt_outputs, 1);
    EXPECT_EQ(got[i].tokens, want.tokens);
    ASSERT_EQ(got[i].prompt_logprobs.size(), want.prompt_logprobs.size());
    for (size_t k = 0; k < want.prompt_logprobs.size(); ++k) {
      const RowLogprobs &a = got[i].prompt_logprobs[k], &b = want.prompt_logprobs[k];
      EXPECT_EQ(a.sampled.token, all[i][k + 1]);
      EXPECT_EQ(a.sampled.logprob, b.sampled.logprob) << "position " << k + 1;
      EXPECT_EQ(a.sampled_rank, b.sampled_rank);
      ASSERT_EQ(a.top.size(), 2u);
      for (size_t t = 0; t < 2; ++t) {
        EXPECT_EQ(a.top[t].token, b.top[t].token);
        EXPECT_EQ(a.top[t].logprob, b.top[t].logprob);
      }
    }
  }
}

// 8 blocks of 8 tokens, 16 tokens a step: chunked prefills, preemptions, cached prefixes.
const std::string kTiny =
    "[scheduler]\nplugin = \"fcfs\"\nmax_num_seqs = 32\nmax_num_batched_tokens = 16\n"
    "[cache]\nplugin = \"paged\"\nnum_blocks = 10\nblock_size = 8\nenable_prefix_caching = true\n"
    "[attention]\nplugin = \"naive\"\n";

TEST(EnginePromptLogprobs, StormWithRecomputeGivesWhatEachGivesAlone) {
  int64_t preemptions = 0;
  expect_same(run(kTiny, /*concurrent=*/true, &preemptions));
  EXPECT_GT(preemptions, 0) << "the tiny pool never preempted";
}

TEST(EnginePromptLogprobs, StormThroughTheHostTierGivesWhatEachGivesAlone) {
  int64_t preemptions = 0;
  expect_same(run(kTiny + "[cache_offload]\nplugin = \"host\"\ncapacity = \"16MiB\"\n", true, &preemptions));
  EXPECT_GT(preemptions, 0);
}

TEST(EnginePromptLogprobs, CachedPrefixesAreScoredNotSkipped) {
  // The roomy pool with prefix caching on, one request at a time: every even request's 21-token
  // prefix is in the cache by then, and it must still compute (and score) it.
  const std::string roomy =
      "[scheduler]\nplugin = \"fcfs\"\n[cache]\nplugin = \"paged\"\nnum_blocks = 64\nblock_size = 16\n"
      "enable_prefix_caching = true\n[attention]\nplugin = \"naive\"\n";
  expect_same(run(roomy, /*concurrent=*/false));
}

}  // namespace
}  // namespace loom
