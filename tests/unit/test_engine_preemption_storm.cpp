// A preemption storm: 64 concurrent greedy requests on a KV pool that holds only a few of them,
// for every in-tree scheduler that preempts (and a scheduler built against interface 1.0), with
// and without the `host` cache_offload tier. Each request must give exactly the token ids it
// gives alone on a roomy pool, the paged cache checks its invariants (free + cached + used ==
// total, every refcount == the tables holding the block) after every change, and the stats the
// engine publishes balance at every output.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"

namespace loom {
namespace {

constexpr int kNumRequests = 64;
constexpr int32_t kFirstId = 3;  // ids below are <unk>, BOS, EOS
constexpr int32_t kVocab = 512;

struct Prompt {
  std::vector<int32_t> ids;
  int32_t max_tokens = 0;
};

// 64 prompts of 2..40 tokens (BOS first) from a fixed seed; every 4th shares a 16-token prefix
// so prefix caching has something to hit.
const std::vector<Prompt>& prompts() {
  static const std::vector<Prompt> all = [] {
    std::mt19937 rng(20261201);
    auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
    std::vector<int32_t> shared;
    for (int i = 0; i < 16; ++i) shared.push_back(uniform(kFirstId, kVocab - 1));
    std::vector<Prompt> out;
    for (int i = 0; i < kNumRequests; ++i) {
      Prompt p;
      p.ids.push_back(1);
      if (i % 4 == 0) p.ids.insert(p.ids.end(), shared.begin(), shared.end());
      const int length = uniform(static_cast<int>(p.ids.size()) + 1, 40);
      while (static_cast<int>(p.ids.size()) < length) p.ids.push_back(uniform(kFirstId, kVocab - 1));
      p.max_tokens = uniform(8, 24);
      out.push_back(std::move(p));
    }
    return out;
  }();
  return all;
}

std::string config_text(const std::string& scheduler, const std::string& cache, bool tier) {
  std::string text = "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\nname = \"s\"\n" +
                     "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"warn\"\n" +
                     "[attention]\nplugin = \"naive\"\n" + scheduler + cache;
  if (tier) text += "[cache_offload]\nplugin = \"host\"\ncapacity = \"16MiB\"\n";
  return text;
}

// 12 blocks of 16 tokens: the longest request (40 + 24 = 64 tokens, 4 blocks) fits alone, three
// at most run together.
std::string tiny_paged(bool prefix_caching) {
  return std::string("[cache]\nplugin = \"paged\"\nnum_blocks = 12\nblock_size = 16\ncheck_invariants = true\n") +
         "enable_prefix_caching = " + (prefix_caching ? "true" : "false") + "\n";
}

struct Outcomes {
  std::vector<std::vector<int32_t>> tokens;  // per prompt
  std::vector<std::string> errors;
  EngineStats final_stats;
  int unbalanced_snapshots = 0;
};

// Submits the prompts (all at once, or each after the previous finished) and collects the ids.
Outcomes run(const std::string& toml, bool concurrent) {
  Engine engine(parse_config(toml, "storm.toml"));
  Outcomes out;
  out.tokens.resize(prompts().size());
  out.errors.resize(prompts().size());
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  auto submit = [&](size_t i) {
    GenerateRequest req;
    req.prompt = prompts()[i].ids;
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = prompts()[i].max_tokens;
    req.sampling.ignore_eos = true;
    req.sink = [&, i](GenerationOutput&& o) {
      // The engine thread: what it published last must balance.
      const EngineStats s = engine.stats();
      std::lock_guard lock(mutex);
      if (s.kv_free_blocks + s.kv_cached_blocks + s.kv_used_blocks != s.kv_total_blocks) ++out.unbalanced_snapshots;
      out.tokens[i].insert(out.tokens[i].end(), o.token_ids.begin(), o.token_ids.end());
      if (o.finish) {
        if (*o.finish == FinishReason::kError) out.errors[i] = o.error.empty() ? "error" : o.error;
        ++done;
        cv.notify_all();
      }
    };
    engine.submit(std::move(req));
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  if (concurrent) {
    for (size_t i = 0; i < prompts().size(); ++i) submit(i);
    std::unique_lock lock(mutex);
    cv.wait_until(lock, deadline, [&] { return done == kNumRequests; });
  } else {
    for (size_t i = 0; i < prompts().size(); ++i) {
      submit(i);
      std::unique_lock lock(mutex);
      cv.wait_until(lock, deadline, [&] { return done == static_cast<int>(i) + 1; });
    }
  }
  {
    std::lock_guard lock(mutex);
    EXPECT_EQ(done, kNumRequests) << "requests never finished";
  }
  engine.shutdown();
  out.final_stats = engine.stats();
  return out;
}

// Each prompt alone on a pool with room for everything (naive attention, as in the storm).
const Outcomes& alone() {
  static const Outcomes r = run(config_text("[scheduler]\nplugin = \"fcfs\"\n",
                                       "[cache]\nplugin = \"paged\"\nnum_blocks = 64\nblock_size = 16\n", false),
                           /*concurrent=*/false);
  return r;
}

struct StormCase {
  std::string name;
  std::string scheduler;  // the whole [scheduler] table
  bool tier = false;
  bool prefix_caching = true;
  bool swaps = false;  // preempted requests come back from the tier
};

void PrintTo(const StormCase& c, std::ostream* os) { *os << c.name; }

class PreemptionStorm : public ::testing::TestWithParam<StormCase> {};

TEST_P(PreemptionStorm, EveryRequestGivesWhatItGivesAlone) {
  const StormCase& c = GetParam();
  const Outcomes& reference = alone();
  for (size_t i = 0; i < prompts().size(); ++i) {
    ASSERT_EQ(reference.errors[i], "") << "prompt " << i << " alone";
    ASSERT_EQ(reference.tokens[i].size(), static_cast<size_t>(prompts()[i].max_tokens)) << "prompt " << i;
  }
  const Outcomes storm = run(config_text(c.scheduler, tiny_paged(c.prefix_caching), c.tier), /*concurrent=*/true);
  for (size_t i = 0; i < prompts().size(); ++i) {
    EXPECT_EQ(storm.errors[i], "") << "prompt " << i;
    EXPECT_EQ(storm.tokens[i], reference.tokens[i]) << "prompt " << i;
  }
  const EngineStats& s = storm.final_stats;
  EXPECT_EQ(storm.unbalanced_snapshots, 0);
  EXPECT_GT(s.num_preemptions, 0) << "the tiny pool never preempted";
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_num_seqs, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
  EXPECT_EQ(s.num_running, 0);
  EXPECT_EQ(s.num_waiting, 0);
  if (c.swaps) {
    EXPECT_GT(s.kv_swapped_out_blocks, 0) << "no preempted request was swapped out";
    EXPECT_GT(s.kv_swapped_in_blocks, 0) << "no swapped block was restored";
  } else {
    EXPECT_EQ(s.kv_swapped_out_blocks, 0);
    EXPECT_EQ(s.kv_swapped_in_blocks, 0);
  }
}

const std::string kBudget = "max_num_seqs = 64\nmax_num_batched_tokens = 64\n";
const std::string kContinuous = "[scheduler]\nplugin = \"continuous\"\n" + kBudget;
const std::string kFcfs = "[scheduler]\nplugin = \"fcfs\"\n" + kBudget;
const std::string kStatic = "[scheduler]\nplugin = \"static\"\n" + kBudget;
// It never chunks a prefill, so its budget must cover max_model_len.
const std::string kPriority = "[scheduler]\nplugin = \"priority\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 512\n";
const std::string kSlo = "[scheduler]\nplugin = \"slo\"\n" + kBudget;
#ifdef LOOM_SCHEDULER_1_1_PLUGIN
// scheduler/fcfs built against the interface 1.1 headers (request views without the SLO fields).
const std::string kFcfs11 = "[scheduler]\nplugin = \"fcfs\"\npath = \"" LOOM_SCHEDULER_1_1_PLUGIN "\"\n";
#endif
#ifdef LOOM_SCHEDULER_1_0_PLUGIN
// Interface 1.0: it frees its victims itself, so even with a tier they recompute.
const std::string kFcfs10 = "[scheduler]\nplugin = \"fcfs10\"\npath = \"" LOOM_SCHEDULER_1_0_PLUGIN "\"\n";
#endif

std::vector<StormCase> cases() {
  std::vector<StormCase> all = {
      {"continuous", kContinuous, false, true, false},
      {"continuous_hostTier", kContinuous, true, false, true},
      {"continuous_hostTier_prefix", kContinuous, true, true, true},
      {"fcfs", kFcfs, false, true, false},
      {"fcfs_hostTier", kFcfs, true, false, true},
      {"static", kStatic, false, true, false},
      {"static_hostTier", kStatic, true, false, true},
      {"priority", kPriority, false, true, false},
      {"priority_hostTier", kPriority, true, false, true},
      {"slo", kSlo, false, true, false},
      // Unmeasured swaps are chosen (to measure them), so the first victims swap.
      {"slo_hostTier", kSlo, true, false, true},
  };
#ifdef LOOM_SCHEDULER_1_1_PLUGIN
  all.push_back({"fcfs11_interface1_1", kFcfs11, false, true, false});
  all.push_back({"fcfs11_interface1_1_hostTier", kFcfs11, true, false, true});
#endif
#ifdef LOOM_SCHEDULER_1_0_PLUGIN
  all.push_back({"fcfs10_interface1_0", kFcfs10, false, true, false});
  all.push_back({"fcfs10_interface1_0_hostTier", kFcfs10, true, false, false});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Schedulers, PreemptionStorm, ::testing::ValuesIn(cases()),
                         [](const auto& info) { return info.param.name; });

#ifdef LOOM_ABI_PLUGIN_DIR
// Only the host frees blocks: a 1.1 scheduler that calls the cache's free is refused, and one
// that breaks the preemption contract of loom/scheduler.h is an error; each ends the request
// with the host's message, and the pool is left whole. A rejection ends it with the scheduler's
// reason, taken from the schedule output.
std::string finish_error(const std::string& name) {
  Engine engine(parse_config(config_text("[scheduler]\nplugin = \"" + name + "\"\npath = \"" LOOM_ABI_PLUGIN_DIR
                                         "/libloom-scheduler-" + name + ".so\"\n",
                                         tiny_paged(true), false),
                             "misbehaving.toml"));
  std::mutex mutex;
  std::condition_variable cv;
  std::optional<GenerationOutput> last;
  GenerateRequest req;
  req.prompt = prompts()[0].ids;
  req.sampling.temperature = 0.0f;
  req.sink = [&](GenerationOutput&& o) {
    std::lock_guard lock(mutex);
    if (o.finish) last = std::move(o);
    cv.notify_all();
  };
  engine.submit(std::move(req));
  std::unique_lock lock(mutex);
  cv.wait_for(lock, std::chrono::seconds(30), [&] { return last.has_value(); });
  if (!last) return "never finished";
  EXPECT_EQ(*last->finish, FinishReason::kError);
  const EngineStats s = engine.stats();
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
  return last->error;
}

struct Breach {
  std::string plugin;    // a case of tests/abi/plugins/test_plugin.cpp
  std::string message;   // what the host says
};
void PrintTo(const Breach& b, std::ostream* os) { *os << b.plugin; }

class KvOwnership : public ::testing::TestWithParam<Breach> {};

TEST_P(KvOwnership, TheHostRefusesTheBreach) {
  const std::string error = finish_error(GetParam().plugin);
  EXPECT_NE(error.find(GetParam().message), std::string::npos) << error;
}

INSTANTIATE_TEST_SUITE_P(
    Breaches, KvOwnership,
    ::testing::Values(Breach{"frees_itself", "schedulers never free blocks"},
                      Breach{"schedules_preempted", "which it preempted in the same step"},
                      Breach{"swaps_without_tier", "swap asked for, but no [cache_offload] tier is configured"},
                      Breach{"preempts_twice", "already preempted in this step"},
                      Breach{"lists_preempted", "interface 1.1 preempts through ctx->preempt"},
                      Breach{"rejects_with_reason", "max_tokens: the test scheduler rejects request 1"}),
    [](const auto& info) { return info.param.plugin; });
#endif

}  // namespace
}  // namespace loom
