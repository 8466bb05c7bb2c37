// Greedy prompts through a live Engine for the engine tests (tests/unit/test_engine_kv_tiers*):
// families of prompts that share prefixes; runs all at once or one after another, some aborted,
// each request's tokens collected; and the engine's stats once its last step and the tier copies
// have settled.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "core/engine/engine.hpp"

namespace loom::test {

struct Prompt {
  std::vector<int32_t> ids;
  int32_t max_tokens = 0;
  bool logprobs = false;  // collect each sampled token's logprob (exact in f32: any K/V bit shows)
};

// Families of requests: family f's share one random prefix of prefix_tokens (BOS first, then ids
// 3..511) and add 1..10 tokens of their own; each generates min_new..max_new tokens.
struct FamilySpec {
  uint32_t seed = 0;
  int families = 0;
  int prefix_tokens = 0;
  int per_family = 0;  // in the storm
  int min_new = 0, max_new = 0;
  bool logprobs = false;
};
// warm: one per family; storm: per_family per family, interleaved.
struct FamilyPrompts {
  std::vector<Prompt> warm, storm;
};

inline FamilyPrompts prefix_families(const FamilySpec& spec) {
  std::mt19937 rng(spec.seed);
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
  std::vector<std::vector<int32_t>> prefixes(static_cast<size_t>(spec.families));
  for (auto& p : prefixes) {
    p.push_back(1);
    while (static_cast<int>(p.size()) < spec.prefix_tokens) p.push_back(uniform(3, 511));
  }
  auto make = [&](int family) {
    Prompt p;
    p.ids = prefixes[static_cast<size_t>(family)];
    const int tail = uniform(1, 10);
    for (int i = 0; i < tail; ++i) p.ids.push_back(uniform(3, 511));
    p.max_tokens = uniform(spec.min_new, spec.max_new);
    p.logprobs = spec.logprobs;
    return p;
  };
  FamilyPrompts out;
  for (int f = 0; f < spec.families; ++f) out.warm.push_back(make(f));
  for (int i = 0; i < spec.per_family * spec.families; ++i) out.storm.push_back(make(i % spec.families));
  return out;
}

struct Outcome {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<std::vector<float>> logprobs;  // of the sampled tokens, where the prompt asked
  std::vector<std::string> errors;
  std::vector<bool> aborted;
};

// Runs `prompts` on `engine`: all at once (concurrent) or one after another. abort_every > 0
// aborts every abort_every-th request: odd ones at submission, even ones at their first token.
inline Outcome run(Engine& engine, const std::vector<Prompt>& prompts, bool concurrent, int abort_every = 0) {
  Outcome out;
  out.tokens.resize(prompts.size());
  out.logprobs.resize(prompts.size());
  out.errors.resize(prompts.size());
  out.aborted.assign(prompts.size(), false);
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0;
  std::vector<uint64_t> ids(prompts.size(), 0);
  auto submit = [&](size_t i) {
    GenerateRequest req;
    req.prompt = prompts[i].ids;
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = prompts[i].max_tokens;
    req.sampling.ignore_eos = true;
    if (prompts[i].logprobs) req.sampling.logprobs = 0;
    const bool abort_here = abort_every > 0 && i % static_cast<size_t>(abort_every) == 0;
    const bool at_first_token = abort_here && (i / static_cast<size_t>(abort_every)) % 2 == 0;
    req.sink = [&, i, at_first_token](GenerationOutput&& o) {
      std::lock_guard lock(mutex);
      out.tokens[i].insert(out.tokens[i].end(), o.token_ids.begin(), o.token_ids.end());
      for (const RowLogprobs& row : o.logprobs) out.logprobs[i].push_back(row.sampled.logprob);
      if (at_first_token && !o.finish && !out.aborted[i]) {
        out.aborted[i] = true;
        engine.abort(ids[i]);
      }
      if (o.finish) {
        if (*o.finish == FinishReason::kError) out.errors[i] = o.error.empty() ? "error" : o.error;
        if (*o.finish == FinishReason::kAbort) out.aborted[i] = true;
        ++done;
        cv.notify_all();
      }
    };
    {
      std::lock_guard lock(mutex);
      ids[i] = engine.submit(std::move(req));
    }
    if (abort_here && !at_first_token) engine.abort(ids[i]);
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  for (size_t i = 0; i < prompts.size(); ++i) {
    submit(i);
    if (concurrent) continue;
    std::unique_lock lock(mutex);
    cv.wait_until(lock, deadline, [&] { return done == i + 1; });
  }
  std::unique_lock lock(mutex);
  cv.wait_until(lock, deadline, [&] { return done == prompts.size(); });
  EXPECT_EQ(done, prompts.size()) << "requests never finished";
  return out;
}

// The stats once the engine has published the end of the last step (a sink runs inside it) and
// the copy worker has written what was queued (spills hold their staging buffer until then).
inline EngineStats settled(const Engine& engine) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  EngineStats s = engine.stats();
  while ((s.kv_num_seqs != 0 || s.num_running != 0 || s.num_waiting != 0 || s.kv_tier_fetching != 0 ||
          s.kv_tier_staging_in_use != 0) &&
         std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s = engine.stats();
  }
  return s;
}

}  // namespace loom::test
