// Prefix spill and restore through the cache_offload tiers (pool -> host -> disk), end to end on
// the engine: a tiny pool evicts shared prefixes, the host spills them, and later requests that
// share them restore them instead of computing them. Greedy on f32 KV, every request must give
// exactly the token ids it gives alone on a roomy pool without tiers -- over host, host + disk,
// disk alone and the radix cache, with preemptions and aborts mixed in, the cache's invariant
// checker on. Afterwards nothing is left in flight and the tiers hold nothing but prefix blocks;
// a disk tier keeps them over a restart, and neither corrupted files nor a kill -9 during writes
// ever make a request give other tokens.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "engine_prompt_runs.hpp"

namespace loom {
namespace {

namespace fs = std::filesystem;
using test::Outcome;
using test::Prompt;
using test::run;
using test::settled;

constexpr int kPrefixTokens = 48;  // three blocks of 16 shared by a family
constexpr int32_t kBlockSize = 16;

// Six families of a 48-token prefix: warm, one request each; storm, six each, interleaved.
const test::FamilyPrompts& workload() {
  static const test::FamilyPrompts w = test::prefix_families(
      {.seed = 20261202, .families = 6, .prefix_tokens = kPrefixTokens, .per_family = 6, .min_new = 8, .max_new = 16});
  return w;
}

struct Tiers {
  std::string name;
  std::string cache = "paged";
  bool host = false;
  bool disk = false;
  bool spill = true;
  std::string host_path;  // a host plugin built elsewhere (the interface 1.0 fixture)
};
void PrintTo(const Tiers& t, std::ostream* os) { *os << t.name; }

std::string config_text(const Tiers& t, const fs::path& disk_dir, int32_t num_blocks = 12,
                        const std::string& model = "stories260K.gguf") {
  std::string text = "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/" + model + "\"\nname = \"s\"\n" +
                     "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"error\"\n[attention]\nplugin = \"naive\"\n" +
                     "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 64\n" +
                     "[cache]\nplugin = \"" + t.cache + "\"\nnum_blocks = " + std::to_string(num_blocks) +
                     "\nblock_size = 16\ncheck_invariants = true\n";
  const std::string disk = "plugin = \"disk\"\ndir = \"" + disk_dir.string() + "\"\ncapacity = \"64MiB\"\n";
  if (t.host) {
    text += "[cache_offload]\nplugin = \"host\"\ncapacity = \"16MiB\"\n";
    if (!t.host_path.empty()) text += "path = \"" + t.host_path + "\"\n";
    text += t.spill ? "" : "spill = false\n";
    if (t.disk) text += "[cache_offload.next]\n" + disk;
  } else if (t.disk) {
    text += "[cache_offload]\n" + disk;
  }
  return text;
}

// Every prompt alone on a roomy pool, no tier.
const Outcome& reference(bool storm) {
  static const auto make = [](const std::vector<Prompt>& prompts) {
    Engine engine(parse_config(config_text(Tiers{"alone"}, {}, 128), "alone.toml"));
    return run(engine, prompts, /*concurrent=*/false);
  };
  static const Outcome warm = make(workload().warm);
  static const Outcome all = make(workload().storm);
  return storm ? all : warm;
}

// Every full block of every (prompt + reference output): the most prefix entries a tier can hold.
size_t distinct_full_blocks() {
  std::set<std::vector<int32_t>> blocks;
  for (bool storm : {false, true}) {
    const auto& prompts = storm ? workload().storm : workload().warm;
    for (size_t i = 0; i < prompts.size(); ++i) {
      std::vector<int32_t> seq = prompts[i].ids;
      const auto& gen = reference(storm).tokens[i];
      seq.insert(seq.end(), gen.begin(), gen.end());
      for (size_t n = kBlockSize; n <= seq.size(); n += kBlockSize) blocks.emplace(seq.begin(), seq.begin() + n);
    }
  }
  return blocks.size();
}

class KvTiers : public ::testing::TestWithParam<Tiers> {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-kv-tiers-" + std::to_string(::getpid()) + "-" +
                                        std::string(::testing::UnitTest::GetInstance()->current_test_info()->name()));
    fs::remove_all(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }
  fs::path dir_;
};

void expect_same_as_alone(const Outcome& got, bool storm, const std::string& what) {
  const Outcome& ref = reference(storm);
  for (size_t i = 0; i < got.tokens.size(); ++i) {
    EXPECT_EQ(got.errors[i], "") << what << " prompt " << i;
    if (got.aborted[i]) {  // what an aborted request gave is the start of what it gives alone
      ASSERT_LE(got.tokens[i].size(), ref.tokens[i].size()) << what << " prompt " << i;
      EXPECT_TRUE(std::equal(got.tokens[i].begin(), got.tokens[i].end(), ref.tokens[i].begin()))
          << what << " prompt " << i;
    } else {
      EXPECT_EQ(got.tokens[i], ref.tokens[i]) << what << " prompt " << i;
    }
  }
}

// Nothing in flight, the pool whole, the tiers within what prefix blocks can be.
void expect_nothing_left(const EngineStats& s) {
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_num_seqs, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
  EXPECT_EQ(s.kv_tier_staging_in_use, 0);
  EXPECT_EQ(s.kv_tier_fetching, 0);
  for (const TierStats& t : s.kv_tiers) EXPECT_LE(static_cast<size_t>(t.entries), distinct_full_blocks()) << t.name;
}

TEST_P(KvTiers, RestoredPrefixesGiveWhatComputedOnesGive) {
  const Tiers& t = GetParam();
  Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
  expect_same_as_alone(run(engine, workload().warm, /*concurrent=*/false), false, "warm");
  settled(engine);  // the warm-up's spills are in the tiers before the storm looks for them
  expect_same_as_alone(run(engine, workload().storm, /*concurrent=*/true), true, "storm");
  const EngineStats s = settled(engine);
  EXPECT_GT(s.num_preemptions, 0) << "the tiny pool never preempted";
  EXPECT_GT(s.kv_tier_decisions.spilled, 0) << "no evicted prefix block was spilled";
  EXPECT_GT(s.kv_tier_decisions.restored, 0) << "no prefix block came back from a tier";
  EXPECT_EQ(s.prefix_cache_miss_lower_tier, s.kv_tier_decisions.restored * kBlockSize);
  int64_t hits = 0;
  for (const TierStats& tier : s.kv_tiers) hits += tier.hits;
  EXPECT_GE(hits, s.kv_tier_decisions.restored);
  expect_nothing_left(s);
}

TEST_P(KvTiers, AbortStormLeavesNothingBehind) {
  const Tiers& t = GetParam();
  Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
  expect_same_as_alone(run(engine, workload().warm, /*concurrent=*/false), false, "warm");
  expect_same_as_alone(run(engine, workload().storm, /*concurrent=*/true, /*abort_every=*/3), true, "storm");
  expect_same_as_alone(run(engine, workload().storm, /*concurrent=*/true, /*abort_every=*/2), true, "storm 2");
  const EngineStats s = settled(engine);
  expect_nothing_left(s);
  if (!t.disk) return;
  int files = 0;
  for (const auto& e : fs::recursive_directory_iterator(dir_)) {
    EXPECT_NE(e.path().extension(), ".tmp") << e.path();
    files += e.is_regular_file() ? 1 : 0;
  }
  EXPECT_EQ(files, s.kv_tiers.back().entries) << "every file on disk is an indexed entry";
}

std::vector<Tiers> chains() {
  std::vector<Tiers> all = {{"host", "paged", true, false}, {"host_disk", "paged", true, true},
                            {"disk", "paged", false, true}, {"radix_host", "radix", true, false},
                            {"radix_host_disk", "radix", true, true}};
#ifdef LOOM_CACHE_OFFLOAD_1_0_PLUGIN
  // A host tier of cache_offload interface 1.0 (save, no save_entry) above a 1.1 disk tier.
  all.push_back({"host1_0_disk", "paged", true, true, true, LOOM_CACHE_OFFLOAD_1_0_PLUGIN});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Chains, KvTiers, ::testing::ValuesIn(chains()),
                         [](const auto& info) { return info.param.name; });

// A tier kept for swaps only (spill = false) holds nothing once the storm is over: a preempted
// request's entries go with it, however it ended.
TEST(KvTiersSwapOnly, AbortStormEmptiesTheTier) {
  Engine engine(parse_config(config_text(Tiers{"swap", "paged", true, false, false}, {}), "swap.toml"));
  expect_same_as_alone(run(engine, workload().storm, /*concurrent=*/true, /*abort_every=*/3), true, "storm");
  const EngineStats s = settled(engine);
  EXPECT_GT(s.kv_swapped_out_blocks, 0);
  EXPECT_TRUE(s.kv_tiers.empty()) << "no spill, no prefix tiers";
  EXPECT_EQ(s.kv_used_blocks, 0);
}

class DiskRestart : public KvTiers {};

// A restarted server hits on its first request that shares a prefix with one served before.
TEST_F(DiskRestart, FirstRequestAfterARestartRestoresFromDisk) {
  const Tiers t{"disk", "paged", false, true};
  {
    Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
    expect_same_as_alone(run(engine, workload().warm, /*concurrent=*/false), false, "before");
  }  // shutdown spills what the pool still caches
  Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
  const Outcome first = run(engine, {workload().warm[0]}, false);
  EXPECT_EQ(first.tokens[0], reference(false).tokens[0]);
  const EngineStats s = settled(engine);
  EXPECT_EQ(s.kv_tier_decisions.restored, kPrefixTokens / kBlockSize) << "the whole shared prefix from disk";
  EXPECT_EQ(s.prefix_cache_miss_lower_tier, kPrefixTokens);
  ASSERT_EQ(s.kv_tiers.size(), 1u);
  EXPECT_EQ(s.kv_tiers[0].hits, kPrefixTokens / kBlockSize);
}

// Flipped bytes, truncations and another model's files: detected, removed, never served.
TEST_F(DiskRestart, CorruptedFilesAreNeverServed) {
  const Tiers t{"disk", "paged", false, true};
  {
    Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
    run(engine, workload().warm, false);
  }
  // The same prompts on another model file: its blocks under the same keys, in its directory.
  const fs::path other = dir_ / "other";
  {
    Engine engine(parse_config(config_text(t, other, 12, "stories260K.llamacpp.gguf"), "other.toml"));
    run(engine, workload().warm, false);
  }
  std::vector<fs::path> ours;
  for (const auto& e : fs::directory_iterator(dir_))
    if (e.is_directory() && e.path() != other)
      for (const auto& f : fs::directory_iterator(e.path())) ours.push_back(f.path());
  std::sort(ours.begin(), ours.end());
  ASSERT_GE(ours.size(), 6u);
  // A third flipped (a payload byte), a third truncated, a third replaced by the other model's
  // file of the same key (same prompts, same chain hashes), where it has one.
  std::set<fs::path> foreign;
  for (const auto& e : fs::recursive_directory_iterator(other))
    if (e.is_regular_file()) foreign.insert(e.path());
  int n = 0, flipped = 0, truncated = 0, swapped = 0;
  for (const fs::path& f : ours) {
    switch (n++ % 3) {
      case 0: {
        std::fstream io(f, std::ios::in | std::ios::out | std::ios::binary);
        io.seekg(200);
        const char c = static_cast<char>(io.get());
        io.seekp(200);
        io.put(static_cast<char>(c ^ 0x5a));
        ++flipped;
        break;
      }
      case 1:
        fs::resize_file(f, fs::file_size(f) / 2);
        ++truncated;
        break;
      default:
        for (const fs::path& g : foreign) {
          if (g.filename() != f.filename()) continue;
          fs::copy_file(g, f, fs::copy_options::overwrite_existing);
          ++swapped;
        }
    }
  }
  EXPECT_GT(flipped, 0);
  EXPECT_GT(truncated, 0);
  EXPECT_GT(swapped, 0) << "the two models' runs share no key";
  Engine engine(parse_config(config_text(t, dir_), "tiers.toml"));
  expect_same_as_alone(run(engine, workload().warm, false), false, "after corruption");
  expect_same_as_alone(run(engine, workload().storm, true), true, "storm after corruption");
  const EngineStats s = settled(engine);
  EXPECT_GT(s.kv_tiers[0].misses, 0) << "the flipped files were found out at load";
}

// kill -9 while the disk tier is writing, then a restart on the same directory: no temporary
// file survives the start-up and every request gives what it gives alone.
TEST_F(DiskRestart, KillDuringWritesThenRestart) {
  const Tiers t{"host_disk", "paged", true, true};
  const std::string toml = config_text(t, dir_);
  (void)reference(true);  // computed before the fork, in this process
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    Engine engine(parse_config(toml, "tiers.toml"));
    for (;;) run(engine, workload().storm, true);
  }
  // Wait until block files are being written, then kill at a moment of the child's choosing.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  int files = 0;
  while (files < 20 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::error_code ec;
    files = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir_, ec)) files += e.is_regular_file() ? 1 : 0;
  }
  ::kill(child, SIGKILL);
  int status = 0;
  ::waitpid(child, &status, 0);
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_GE(files, 20) << "the child never wrote to the disk tier";
  Engine engine(parse_config(toml, "tiers.toml"));
  for (const auto& e : fs::recursive_directory_iterator(dir_)) EXPECT_NE(e.path().extension(), ".tmp") << e.path();
  expect_same_as_alone(run(engine, workload().storm, true), true, "after kill -9");
}

}  // namespace
}  // namespace loom
