// Runs a list of prompts through an Engine built from TOML text, `concurrency` at a time, and
// keeps what each request streamed (token ids, text, chunk count, error) and the engine's stats
// after shutdown: the measuring stick of the speculative-decoding tests, which compare a run
// with a speculator against the same run without one.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom::test {

struct SpecOutput {
  std::vector<int32_t> ids;
  std::string text;
  std::string error;
  int chunks = 0;
};

struct SpecRun {
  std::vector<SpecOutput> outputs;
  EngineStats stats;
};

struct SpecRunOptions {
  int concurrency = 1;
  bool opt_out = false;  // speculative_decoding = false on every request
  float temperature = 0.0f;
  int max_tokens = 48;
  std::vector<std::string> stop = {"\n\n"};
};

// The prompts as token ids, made with the engine's own tokenizer where they start as text.
using PromptSource = std::function<std::vector<std::vector<int32_t>>(const Tokenizer&)>;

// An engine on `model_path` (f32 CPU path, flash_cpu, continuous, paged with its invariants
// checked after every change) plus the given [speculator] table; `cache_path` loads the paged
// cache from another file (an older interface's build).
inline std::string spec_engine_config(const std::string& model_path, const std::string& speculator,
                                      const std::string& cache_path = "") {
  return "[model]\npath = \"" + model_path + "\"\nname = \"s\"\n" +
         "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"warn\"\n[attention]\nplugin = \"flash_cpu\"\n" +
         "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 16\nmax_num_batched_tokens = 256\n" +
         "[cache]\nplugin = \"paged\"\nnum_blocks = 160\nblock_size = 16\ncheck_invariants = true\n" +
         (cache_path.empty() ? "" : "path = \"" + cache_path + "\"\n") + speculator;
}

// A [speculator] table with a fixed k (adaptation off, so every step speculates).
inline std::string spec_table(const std::string& plugin, int k, const std::string& extra = "") {
  return "[speculator]\nplugin = \"" + plugin + "\"\nnum_speculative_tokens = " + std::to_string(k) +
         "\nadaptive = false\n" + extra;
}

inline SpecRun run_prompts(const std::string& toml, const PromptSource& make_prompts, const SpecRunOptions& o) {
  Engine engine(parse_config(toml, "spec.toml"));
  const std::vector<std::vector<int32_t>> prompts = make_prompts(engine.tokenizer());
  SpecRun r;
  r.outputs.resize(prompts.size());
  std::mutex mutex;
  std::condition_variable cv;
  size_t done = 0, next = 0;
  auto submit = [&](size_t i) {
    GenerateRequest req;
    req.prompt = prompts[i];
    req.sampling.temperature = o.temperature;
    req.sampling.seed = 1000 + i;
    req.sampling.max_tokens = o.max_tokens;
    req.sampling.stop = o.stop;
    req.sampling.speculative_decoding = !o.opt_out;
    req.sink = [&, i](GenerationOutput&& g) {
      std::lock_guard lock(mutex);
      SpecOutput& out = r.outputs[i];
      out.ids.insert(out.ids.end(), g.token_ids.begin(), g.token_ids.end());
      out.text += g.text;
      ++out.chunks;
      if (g.finish) {
        if (*g.finish == FinishReason::kError) out.error = g.error.empty() ? "error" : g.error;
        ++done;
        cv.notify_all();
      }
    };
    engine.submit(std::move(req));
  };
  const size_t window = static_cast<size_t>(o.concurrency);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(300);
  std::unique_lock lock(mutex);
  while (done < prompts.size() && std::chrono::steady_clock::now() < deadline) {
    while (next < prompts.size() && next - done < window) {
      lock.unlock();
      submit(next++);
      lock.lock();
    }
    cv.wait_until(lock, deadline,
                  [&] { return (next < prompts.size() && next - done < window) || done == prompts.size(); });
  }
  EXPECT_EQ(done, prompts.size()) << "requests never finished";
  lock.unlock();
  engine.shutdown();
  r.stats = engine.stats();
  return r;
}

// Every request of `spec` streamed exactly the ids and text it streamed in `plain`, without error.
inline void expect_same_outputs(const SpecRun& plain, const SpecRun& spec) {
  ASSERT_EQ(spec.outputs.size(), plain.outputs.size());
  for (size_t i = 0; i < plain.outputs.size(); ++i) {
    ASSERT_EQ(plain.outputs[i].error, "") << "prompt " << i;
    EXPECT_EQ(spec.outputs[i].error, "") << "prompt " << i;
    EXPECT_EQ(spec.outputs[i].ids, plain.outputs[i].ids) << "prompt " << i;
    EXPECT_EQ(spec.outputs[i].text, plain.outputs[i].text) << "prompt " << i;
  }
}

}  // namespace loom::test
