// Deliverable 2 of the hardening issue for the kinds beside the scheduler (that one:
// test_engine_fault_injection.cpp). Each fault-injecting wrapper (tests/abi/plugins/faulty_<kind>.cpp)
// runs an in-tree plugin of its kind and fails one call its config names: an error status, an
// exception inside the plugin, or a bad value (NaN in one request's rows is that request's).
// Eight greedy requests run together; then
//   - a per-request fault ends exactly one request, with an error naming it, and no other;
//   - a fault in a call that serves the whole step (attention's forward, a linear) ends that
//     step's requests (the loop ends every live one: the KV pool was written halfway);
//   - a fault in a plugin that only saves work (speculator, KV tier) ends none: the host goes on
//     without drafts, or recomputes what the tier lost;
// every request that is not ended gives exactly the greedy tokens of a run without the fault, the
// pool's blocks all come back (the paged cache also checks its invariants after every change), and
// the same engine then serves all eight again, exactly as before.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"

namespace loom {
namespace {

#if defined(LOOM_ABI_PLUGIN_DIR) && defined(LOOM_PLUGIN_BIN_DIR)
constexpr int kNumRequests = 8;

struct Outcome {
  FinishReason finish = FinishReason::kAbort;
  std::vector<int32_t> tokens;
  std::string error;
};

// 8 prompts of 5..33 tokens (BOS first), ids from a fixed formula.
std::vector<int32_t> prompt(int i) {
  std::vector<int32_t> ids{1};
  for (int t = 1; t < 5 + 4 * i; ++t) ids.push_back(3 + (i * 37 + t * 11) % 500);
  return ids;
}

// A wrapper table: [kind] is the fault plugin over the in-tree `inner`, with `keys` (the inner
// plugin's own and the fault's).
std::string wrapped(const std::string& kind, const std::string& inner, const std::string& keys) {
  return "[" + kind + "]\nplugin = \"faults\"\npath = \"" LOOM_ABI_PLUGIN_DIR "/libloom-" + kind +
         "-faults.so\"\ninner = \"" LOOM_PLUGIN_BIN_DIR "/libloom-" + kind + "-" + inner + ".so\"\n" + keys;
}

std::string config_text(const std::string& tables) {
  return "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\n" +
         "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"off\"\n" +
         "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 8\nmax_num_batched_tokens = 256\n" + tables;
}

// Submits every prompt at once and waits until each has finished.
std::vector<Outcome> run_all(Engine& engine, bool speculative, int max_tokens = 12) {
  std::mutex m;
  std::condition_variable cv;
  std::vector<Outcome> out(kNumRequests);
  int done = 0;
  for (int i = 0; i < kNumRequests; ++i) {
    GenerateRequest req;
    req.prompt = prompt(i);
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = max_tokens;
    req.sampling.ignore_eos = true;
    req.sampling.speculative_decoding = speculative;
    req.sink = [&, i](GenerationOutput&& o) {
      std::lock_guard lock(m);
      out[i].tokens.insert(out[i].tokens.end(), o.token_ids.begin(), o.token_ids.end());
      if (!o.finish) return;
      out[i].finish = *o.finish;
      out[i].error = o.error;
      ++done;
      cv.notify_all();
    };
    engine.submit(std::move(req));
  }
  std::unique_lock lock(m);
  EXPECT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return done == kNumRequests; }));
  return out;
}

// The stats once the engine has published after the last request's blocks went back (its last
// output reaches the sink before that publish).
EngineStats settled(Engine& engine) {
  EngineStats s = engine.stats();
  for (int i = 0; i < 5000 && (s.kv_used_blocks != 0 || s.num_running + s.num_waiting != 0); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
    s = engine.stats();
  }
  return s;
}

enum class Expect {
  kOneFails,   // a per-request fault: exactly one request ends with the error
  kStepFails,  // a fault of a call serving the whole step: at least one request ends with it
  kNoneFails,  // a fault of a plugin that only saves work: the host goes on without it
};

struct FaultCase {
  std::string name;
  std::string tables;  // the config's tables; a `FAULT` line stands where the fault keys go
  std::string fault;   // fault_call / fault_on_call / fault keys
  Expect expect;
  std::string error;  // a part of the failed requests' error
  bool speculative = false;
};

std::string with_fault(const FaultCase& c, bool faulty) {
  std::string tables = c.tables;
  tables.replace(tables.find("FAULT\n"), 6, faulty ? c.fault : "");
  return config_text(tables);
}

class PluginFaults : public ::testing::TestWithParam<FaultCase> {};

TEST_P(PluginFaults, TheFaultEndsOnlyWhatItTouchesAndTheEngineGoesOn) {
  const FaultCase& c = GetParam();
  std::vector<Outcome> want;
  {
    Engine clean(parse_config(with_fault(c, false), "clean.toml"));
    want = run_all(clean, c.speculative);
  }
  for (const Outcome& o : want) ASSERT_EQ(o.finish, FinishReason::kLength) << o.error;

  Engine engine(parse_config(with_fault(c, true), "faults.toml"));
  const std::vector<Outcome> got = run_all(engine, c.speculative);
  int failed = 0;
  for (int i = 0; i < kNumRequests; ++i) {
    if (got[i].finish == FinishReason::kError) {
      ++failed;
      EXPECT_NE(got[i].error.find(c.error), std::string::npos) << "request " << i << ": " << got[i].error;
      continue;
    }
    EXPECT_EQ(got[i].finish, FinishReason::kLength) << "request " << i;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
  }
  switch (c.expect) {
    case Expect::kOneFails: EXPECT_EQ(failed, 1); break;
    case Expect::kStepFails: EXPECT_GE(failed, 1); break;
    case Expect::kNoneFails: EXPECT_EQ(failed, 0); break;
  }
  EngineStats s = settled(engine);
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);

  // The same engine, no restart: every request as without the fault (each fault fired once).
  const std::vector<Outcome> again = run_all(engine, c.speculative);
  for (int i = 0; i < kNumRequests; ++i) {
    EXPECT_EQ(again[i].finish, FinishReason::kLength) << "request " << i << ": " << again[i].error;
    EXPECT_EQ(again[i].tokens, want[i].tokens) << "request " << i;
  }
  s = settled(engine);
  EXPECT_EQ(s.kv_used_blocks, 0);
  EXPECT_EQ(s.kv_free_blocks + s.kv_cached_blocks, s.kv_total_blocks);
}

std::string fault(const std::string& call, int n, const std::string& what) {
  return "fault_call = \"" + call + "\"\nfault_on_call = " + std::to_string(n) + "\nfault = \"" + what + "\"\n";
}

const std::string kPaged = "num_blocks = 64\nblock_size = 16\ncheck_invariants = true\n";
const std::string kCache = wrapped("cache", "paged", kPaged + "FAULT\n");
const std::string kAttention = wrapped("attention", "naive", "FAULT\n") + "[cache]\nplugin = \"paged\"\n" + kPaged;
const std::string kQuantization = wrapped("quantization", "none", "FAULT\n") + "[cache]\nplugin = \"paged\"\n" + kPaged;
const std::string kSpeculator = wrapped("speculator", "ngram", "num_speculative_tokens = 3\nadaptive = false\nFAULT\n") +
                                "[cache]\nplugin = \"paged\"\n" + kPaged;
// 12 blocks of 16 tokens hold three or four of the requests: the rest wait, and growing ones
// preempt others, which the continuous scheduler swaps to the tier.
const std::string kTier = "[cache]\nplugin = \"paged\"\nnum_blocks = 12\nblock_size = 16\ncheck_invariants = true\n" +
                          wrapped("cache_offload", "host", "capacity = \"16MiB\"\nFAULT\n");

INSTANTIATE_TEST_SUITE_P(
    Kinds, PluginFaults,
    ::testing::Values(
        FaultCase{"cache_block_table_bad_id", kCache, fault("block_table", 9, "bad_value"), Expect::kOneFails,
                  "outside the pool"},
        FaultCase{"cache_block_table_error", kCache, fault("block_table", 9, "error"), Expect::kOneFails, "block_table"},
        FaultCase{"cache_commit_throws", kCache, fault("commit", 9, "throw"), Expect::kOneFails,
                  "injected fault: commit call 9"},
        FaultCase{"cache_free_error", kCache, fault("free", 2, "error"), Expect::kNoneFails, ""},
        // allocate is the scheduler's call: the in-tree ones refuse the bad count by failing their
        // schedule(), whose state is then in doubt, so the step ends for all.
        FaultCase{"cache_allocate_bad_count", kCache, fault("allocate", 3, "bad_value"), Expect::kStepFails,
                  "at least one must be computed"},
        FaultCase{"attention_forward_error", kAttention, fault("forward", 13, "error"), Expect::kStepFails,
                  "attention plugin forward failed"},
        FaultCase{"attention_forward_throws", kAttention, fault("forward", 13, "throw"), Expect::kStepFails,
                  "injected fault: forward call 13"},
        FaultCase{"attention_forward_nan", kAttention, fault("forward", 13, "bad_value"), Expect::kOneFails,
                  "non-finite logits"},
        FaultCase{"quantization_linear_throws", kQuantization, fault("linear", 200, "throw"), Expect::kStepFails,
                  "injected fault: linear call 200"},
        FaultCase{"quantization_linear_nan", kQuantization, fault("linear", 200, "bad_value"), Expect::kOneFails,
                  "non-finite logits"},
        FaultCase{"speculator_propose_error", kSpeculator, fault("propose", 3, "error"), Expect::kNoneFails, "", true},
        FaultCase{"speculator_propose_throws", kSpeculator, fault("propose", 3, "throw"), Expect::kNoneFails, "",
                  true},
        FaultCase{"speculator_propose_bad_drafts", kSpeculator, fault("propose", 3, "bad_value"), Expect::kNoneFails,
                  "", true},
        FaultCase{"speculator_observe_throws", kSpeculator, fault("observe", 2, "throw"), Expect::kNoneFails, "",
                  true},
        FaultCase{"speculator_finish_error", kSpeculator, fault("finish", 1, "error"), Expect::kNoneFails, "", true},
        FaultCase{"tier_save_error", kTier, fault("save", 2, "error"), Expect::kNoneFails, ""},
        FaultCase{"tier_load_throws", kTier, fault("load", 1, "throw"), Expect::kNoneFails, ""},
        FaultCase{"tier_drop_error", kTier, fault("drop", 1, "error"), Expect::kNoneFails, ""}),
    [](const ::testing::TestParamInfo<FaultCase>& info) { return info.param.name; });

// Adaptive speculation prices the proposal (core/engine/proposal_cost_model.hpp): a speculator
// whose every proposal takes 100 ms (the "slow" fault), against steps of a few ms, drafts only
// until its cost is measured, is never probed again (speculating cannot pay at any rate), and the
// output is what it is without speculation. Without the proposal's price it drafted every step.
TEST(AdaptiveSpeculation, TurnsOffASpeculatorSlowerThanItSaves) {
  const std::string slow = "fault_call = \"propose\"\nfault_on_call = 1\nfault_calls = 1000000\nfault = \"slow\"\n"
                           "delay_ms = 100\n";
  const std::string tables = wrapped("speculator", "ngram", "num_speculative_tokens = 3\n" + slow) +
                             "[cache]\nplugin = \"paged\"\n" + kPaged;
  Engine plain(parse_config(config_text("[cache]\nplugin = \"paged\"\n" + kPaged), "plain.toml"));
  const std::vector<Outcome> want = run_all(plain, false, 40);
  Engine engine(parse_config(config_text(tables), "slow.toml"));
  const auto started = std::chrono::steady_clock::now();
  const std::vector<Outcome> got = run_all(engine, true, 40);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  for (int i = 0; i < kNumRequests; ++i) {
    EXPECT_EQ(got[i].finish, FinishReason::kLength) << "request " << i << ": " << got[i].error;
    EXPECT_EQ(got[i].tokens, want[i].tokens) << "request " << i;
  }
  const SpecDecodeStats s = settled(engine).spec_decode;
  // 8 requests of 40 tokens: about 40 steps with a request to speculate for.
  ASSERT_GE(s.num_steps, 30);
  // The oldest request drafts while the step-time model gathers its first 8 steps.
  EXPECT_GE(s.num_steps_adaptive_off, s.num_steps - 10) << "steps that drafted: " << s.num_steps - s.num_steps_adaptive_off;
  EXPECT_GE(s.proposal_per_step_us + s.proposal_per_request_draft_us + s.proposal_per_catch_up_token_us, 1000.0);
  EXPECT_LT(seconds, 3.0) << "a proposal every step would take 4 s";
}
#endif

}  // namespace
}  // namespace loom
