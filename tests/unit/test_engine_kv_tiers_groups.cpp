// A cache_offload tier under block-table groups (cache interfaces 1.5, 1.6), on the engine: the
// random gemma3-tiny preset (3 layers: 2 local of window 8, 1 global -> 3 groups of one layer)
// on a pool so small that requests are preempted by swap and shared prefixes are evicted, spilled
// and come back. Greedy on f32 KV, every request gives exactly the tokens it gives alone on a
// roomy pool without a tier:
// for paged and radix (both with group_block_hashes), swapped requests are restored group by
// group, and a prefix block comes back only with every group's block (restore decisions count
// pool blocks, three per position).
#include <gtest/gtest.h>
#include <spdlog/sinks/ostream_sink.h>

#include <sstream>
#include <string>
#include <vector>

#include "core/common/log_sinks.hpp"
#include "core/common/logging.hpp"
#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "engine_prompt_runs.hpp"
#include "random_preset_model.hpp"

namespace loom {
namespace {

using test::Outcome;
using test::Prompt;

constexpr int32_t kBlockSize = 16;
constexpr int32_t kGroups = 3;

const std::string& model_path() { return test::random_preset_path("gemma3-tiny", 3); }

// Four families of a 64-token prefix (four blocks) with the sampled tokens' logprobs: warm, one
// request each, one after another; storm, five each, interleaved, all at once.
const test::FamilyPrompts& workload() {
  static const test::FamilyPrompts w = test::prefix_families({.seed = 20261207, .families = 4, .prefix_tokens = 64,
                                                              .per_family = 5, .min_new = 16, .max_new = 30,
                                                              .logprobs = true});
  return w;
}

// 21 blocks: a third of them, 7 blocks or 112 tokens, per request and group at most.
// cache_path: an explicit .so for the cache (an ABI fixture), else the in-tree plugin.
std::string config_text(const std::string& cache, bool tier, int32_t num_blocks = 21,
                        const std::string& cache_path = "") {
  std::string text = "[model]\npath = \"" + model_path() + "\"\nname = \"g\"\n" +
                     "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"error\"\n[attention]\nplugin = \"naive\"\n" +
                     "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 96\n" +
                     "[cache]\nplugin = \"" + cache + "\"\nnum_blocks = " + std::to_string(num_blocks) +
                     "\nblock_size = " + std::to_string(kBlockSize) + "\ncheck_invariants = true\n";
  if (!cache_path.empty()) text += "path = \"" + cache_path + "\"\n";
  if (tier) text += "[cache_offload]\nplugin = \"host\"\ncapacity = \"16MiB\"\n";
  return text;
}

// Every prompt alone on a roomy pool, no tier.
const Outcome& reference(bool storm) {
  static const auto make = [](const std::vector<Prompt>& prompts) {
    Engine engine(parse_config(config_text("paged", false, 400), "alone.toml"));
    return test::run(engine, prompts, /*concurrent=*/false);
  };
  static const Outcome warm = make(workload().warm);
  static const Outcome all = make(workload().storm);
  return storm ? all : warm;
}

void expect_same_as_alone(const Outcome& got, bool storm, const std::string& what) {
  const Outcome& ref = reference(storm);
  for (size_t i = 0; i < got.tokens.size(); ++i) {
    EXPECT_EQ(got.errors[i], "") << what << " prompt " << i;
    EXPECT_EQ(got.tokens[i], ref.tokens[i]) << what << " prompt " << i;
    EXPECT_EQ(got.logprobs[i], ref.logprobs[i]) << what << " prompt " << i;
  }
}

// Warm-up, then the storm, on `cache` with a host tier; the engine's stats after both settled.
// `log` gets what start-up and the runs log at warn and above.
EngineStats run_with_tier(const std::string& cache, std::string* log, const std::string& cache_path = "") {
  (void)reference(true);  // computed first, out of the captured log
  std::ostringstream out;
  auto sink = std::make_shared<spdlog::sinks::ostream_sink_mt>(out);
  sink->set_pattern("%v");
  add_log_sink(sink);
  EngineStats s;
  {
    Engine engine(parse_config(config_text(cache, true, 21, cache_path), "tier.toml"));
    expect_same_as_alone(test::run(engine, workload().warm, /*concurrent=*/false), false, cache + " warm");
    test::settled(engine);  // the warm-up's spills are in the tier before the storm looks for them
    expect_same_as_alone(test::run(engine, workload().storm, /*concurrent=*/true), true, cache + " storm");
    s = test::settled(engine);
  }
  remove_log_sink(sink);
  *log = out.str();
  EXPECT_GT(s.num_preemptions, 0) << "the tiny pool never preempted";
  EXPECT_GT(s.kv_swapped_out_blocks, 0) << "no preempted request was swapped out";
  EXPECT_GT(s.kv_swapped_in_blocks, 0) << "no swapped block came back";
  EXPECT_GT(s.kv_tier_decisions.spilled, 0) << "no evicted prefix block was spilled";
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_num_seqs, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
  EXPECT_EQ(s.kv_tier_staging_in_use, 0);
  EXPECT_EQ(s.kv_tier_fetching, 0);
  return s;
}

class KvTiersGroups : public ::testing::TestWithParam<std::string> {};

TEST_P(KvTiersGroups, RestoresEveryGroupsBlocks) {
  std::string log;
  const EngineStats s = run_with_tier(GetParam(), &log);
  EXPECT_GT(s.kv_tier_decisions.restored, 0) << "no prefix block came back from the tier";
  EXPECT_EQ(s.kv_tier_decisions.restored % kGroups, 0) << "a position comes back with all its groups' blocks";
  EXPECT_EQ(s.prefix_cache_miss_lower_tier, s.kv_tier_decisions.restored / kGroups * kBlockSize);
  EXPECT_EQ(log.find("group_block_hashes"), std::string::npos) << log;
}

INSTANTIATE_TEST_SUITE_P(Caches, KvTiersGroups, ::testing::Values("paged", "radix"),
                         [](const auto& info) { return info.param; });

#ifdef LOOM_CACHE_1_5_PLUGIN
// paged built against cache interface 1.5: groups, but no group_block_hashes. Swaps and spills go
// on; no spilled prefix comes back, and start-up says why.
TEST(KvTiersGroupsCache15, SpillsButRestoresNoPrefixAndSaysWhy) {
  std::string log;
  const EngineStats s = run_with_tier("paged", &log, LOOM_CACHE_1_5_PLUGIN);
  EXPECT_EQ(s.kv_tier_decisions.restored, 0);
  EXPECT_EQ(s.prefix_cache_miss_lower_tier, 0);
  EXPECT_NE(log.find("cache_offload: cache 'paged' has 3 block-table groups but no group_block_hashes (cache "
                     "interface 1.6), so the tiers cannot find its other groups' blocks: evicted prefix blocks are "
                     "spilled, never restored"),
            std::string::npos)
      << log;
}
#endif

}  // namespace
}  // namespace loom
