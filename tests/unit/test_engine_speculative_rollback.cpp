// Rollback of rejected drafts is exact. (1) On the executor: a sequence decoded by verifying
// drafts (some the greedy tokens, some wrong, k from 1 to 5, then "rolled back" by computing on
// from the accepted position) ends with the same tokens, bit-identical logits at every accepted
// position, and K/V for every live position bit-identical (f32) to the sequence decoded one
// token at a time. (2) In the engine: a storm of speculating requests on a tiny paged pool
// (preemptions, prefix caching, invariants checked after every cache change) with half of them
// aborted mid-flight leaks nothing and the survivors give what they give alone.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "core/config/config.hpp"
#include "core/engine/engine.hpp"
#include "test_executor_support.hpp"

namespace loom {
namespace {

constexpr int32_t kDecodes = 40;

// K and V of positions [0, n) of a sequence whose table is blocks 0.., every layer, as bytes.
std::vector<float> live_kv(const test::ModelRunner& r, int32_t n) {
  const KvPool& pool = r.pool();
  const KvPoolShape& s = pool.shape();
  const size_t per_token = static_cast<size_t>(s.n_kv_heads) * static_cast<size_t>(s.head_dim);
  std::vector<float> out;
  for (int32_t layer = 0; layer < s.n_layers; ++layer) {
    for (const loom_tensor_view* view : {&const_cast<KvPool&>(pool).k(layer), &const_cast<KvPool&>(pool).v(layer)}) {
      const auto* base = static_cast<const float*>(view->data);  // [num_blocks, block_size, n_kv_heads, head_dim]
      out.insert(out.end(), base, base + static_cast<size_t>(n) * per_token);  // blocks 0.. are contiguous
    }
  }
  return out;
}

TEST(SpeculativeRollback, KvAfterAcceptedAndRejectedDraftsEqualsPlainDecode) {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.gguf"));
  test::ModelRunner plain_runner(file), spec_runner(file);
  const std::vector<int32_t> prompt = test::random_prompt(11, 5);
  const int32_t vocab = plain_runner.vocab();
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, 8);

  // Plain: prefill, then one token per step; logits_at[p] = the row scoring position p + 1.
  std::vector<int32_t> plain = prompt;
  std::vector<std::vector<float>> logits_at(prompt.size() + kDecodes + 1);
  int32_t computed = 0;
  while (static_cast<int32_t>(plain.size()) < static_cast<int32_t>(prompt.size()) + kDecodes) {
    SeqSchedule s{std::span<const int32_t>(plain).subspan(static_cast<size_t>(computed)), computed, table, true};
    const std::vector<float> row = plain_runner.step(std::span<const SeqSchedule>(&s, 1));
    computed = static_cast<int32_t>(plain.size());
    logits_at[static_cast<size_t>(computed - 1)] = row;
    plain.push_back(test::argmax(row));
  }

  // Speculative: prefill alike, then verify k drafts per step, each draft the plain token with
  // probability 2/3 (else a wrong one), accepting the longest agreeing prefix plus the bonus.
  std::mt19937_64 rng(11);
  std::vector<int32_t> tokens = prompt;
  {
    SeqSchedule s{tokens, 0, table, true};
    tokens.push_back(test::argmax(spec_runner.step(std::span<const SeqSchedule>(&s, 1))));
  }
  computed = static_cast<int32_t>(prompt.size());
  int accepted_total = 0, rejected_total = 0;
  while (static_cast<int32_t>(tokens.size()) < static_cast<int32_t>(plain.size())) {
    const int32_t room = static_cast<int32_t>(plain.size() - tokens.size()) - 1;
    const int32_t k = std::min<int32_t>(1 + static_cast<int32_t>(rng() % 5), room);
    std::vector<int32_t> input = tokens;
    for (int32_t j = 0; j < k; ++j) {
      const int32_t truth = plain[tokens.size() + static_cast<size_t>(j)];
      input.push_back(rng() % 3 != 0 ? truth : (truth + 1 + static_cast<int32_t>(rng() % 100)) % vocab);
    }
    SeqSchedule s{std::span<const int32_t>(input).subspan(static_cast<size_t>(computed)), computed, table, true, true};
    const std::vector<float> rows = spec_runner.step(std::span<const SeqSchedule>(&s, 1));
    ASSERT_EQ(rows.size(), static_cast<size_t>(k + 1) * static_cast<size_t>(vocab));
    for (int32_t j = 0; j <= k; ++j) {
      const std::span<const float> row(rows.data() + static_cast<size_t>(j) * vocab, static_cast<size_t>(vocab));
      const auto pos = static_cast<size_t>(computed + j);
      ASSERT_TRUE(test::bit_equal(row, logits_at[pos])) << "row for position " << pos;
      const int32_t next = test::argmax(row);
      tokens.push_back(next);
      if (j == k || next != input[pos + 1]) {
        rejected_total += k - j;
        break;
      }
      ++accepted_total;
    }
    computed = static_cast<int32_t>(tokens.size()) - 1;  // rollback: what follows is rewritten
  }
  EXPECT_EQ(tokens, plain);
  EXPECT_GT(accepted_total, 0);
  EXPECT_GT(rejected_total, 0);
  const std::vector<float> a = live_kv(plain_runner, computed), b = live_kv(spec_runner, computed);
  ASSERT_EQ(a.size(), b.size());
  EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << "live K/V differ";
}

std::string storm_config(bool speculate) {
  std::string text = "[model]\npath = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\nname = \"s\"\n" +
                     "[runtime]\nthreads = 2\nseed = 7\n[logging]\nlevel = \"warn\"\n[attention]\nplugin = \"naive\"\n" +
                     "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 64\n" +
                     "[cache]\nplugin = \"paged\"\nnum_blocks = 14\nblock_size = 16\ncheck_invariants = true\n";
  if (speculate) text += "[speculator]\nplugin = \"ngram\"\nnum_speculative_tokens = 4\nadaptive = false\nmin_n = 1\n";
  return text;
}

struct StormResult {
  std::vector<std::vector<int32_t>> tokens;
  std::vector<FinishReason> finish;
  std::vector<std::string> errors;
  EngineStats stats;
};

// 48 greedy requests (repetitive prompts, so n-grams hit) at once; with `abort_odd`, every odd
// one is aborted after its third output.
StormResult storm(bool speculate, bool abort_odd, bool concurrent) {
  Engine engine(parse_config(storm_config(speculate), "storm.toml"));
  constexpr int kN = 48;
  StormResult r;
  r.tokens.resize(kN);
  r.finish.resize(kN, FinishReason::kError);
  r.errors.resize(kN);
  std::mutex mutex;
  std::condition_variable cv;
  int done = 0;
  std::vector<uint64_t> ids(kN, 0);
  std::vector<int> outputs(kN, 0);
  std::vector<uint64_t> to_abort;
  auto submit = [&](int i) {
    GenerateRequest req;
    std::mt19937 rng(static_cast<uint32_t>(100 + i));
    req.prompt = {1};
    std::vector<int32_t> motif;
    for (int j = 0; j < 3 + i % 4; ++j) motif.push_back(3 + static_cast<int32_t>(rng() % 509));
    for (int rep = 0; rep < 3; ++rep) req.prompt.insert(req.prompt.end(), motif.begin(), motif.end());
    req.sampling.temperature = 0.0f;
    req.sampling.max_tokens = 16 + i % 9;
    req.sampling.ignore_eos = true;
    req.sink = [&, i](GenerationOutput&& o) {
      std::lock_guard lock(mutex);
      r.tokens[static_cast<size_t>(i)].insert(r.tokens[static_cast<size_t>(i)].end(), o.token_ids.begin(), o.token_ids.end());
      if (++outputs[static_cast<size_t>(i)] == 3 && abort_odd && i % 2 == 1) to_abort.push_back(static_cast<uint64_t>(i));
      if (o.finish) {
        r.finish[static_cast<size_t>(i)] = *o.finish;
        r.errors[static_cast<size_t>(i)] = o.error;
        ++done;
      }
      cv.notify_all();
    };
    const uint64_t id = engine.submit(std::move(req));
    std::lock_guard lock(mutex);
    ids[static_cast<size_t>(i)] = id;
  };
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(240);
  for (int i = 0; i < kN; ++i) {
    submit(i);
    if (!concurrent) {
      std::unique_lock lock(mutex);
      cv.wait_until(lock, deadline, [&] { return done == i + 1; });
    }
  }
  std::unique_lock lock(mutex);
  while (done < kN && std::chrono::steady_clock::now() < deadline) {
    cv.wait_until(lock, deadline, [&] { return done == kN || !to_abort.empty(); });
    std::vector<uint64_t> aborts;
    aborts.swap(to_abort);
    lock.unlock();
    for (uint64_t i : aborts) engine.abort(ids[i]);
    lock.lock();
  }
  EXPECT_EQ(done, kN);
  lock.unlock();
  engine.shutdown();
  r.stats = engine.stats();
  return r;
}

TEST(SpeculativeRollback, AbortStormWithSpeculationLeaksNothing) {
  const StormResult alone = storm(/*speculate=*/false, /*abort_odd=*/false, /*concurrent=*/false);
  const StormResult s = storm(/*speculate=*/true, /*abort_odd=*/true, /*concurrent=*/true);
  int aborted = 0;
  for (size_t i = 0; i < s.tokens.size(); ++i) {
    EXPECT_EQ(s.errors[i], "") << "request " << i;
    if (i % 2 == 0) {
      EXPECT_EQ(s.finish[i], FinishReason::kLength) << "request " << i;
      EXPECT_EQ(s.tokens[i], alone.tokens[i]) << "request " << i;
    } else {
      aborted += s.finish[i] == FinishReason::kAbort ? 1 : 0;
      // Whatever an aborted request got before its abort is a prefix of its whole output.
      ASSERT_LE(s.tokens[i].size(), alone.tokens[i].size());
      EXPECT_TRUE(std::equal(s.tokens[i].begin(), s.tokens[i].end(), alone.tokens[i].begin())) << "request " << i;
    }
  }
  EXPECT_GT(aborted, 0);
  EXPECT_GT(s.stats.num_preemptions, 0) << "the tiny pool never preempted";
  EXPECT_GT(s.stats.spec_decode.num_accepted_tokens, 0);
  EXPECT_EQ(s.stats.kv_used_blocks, 0);
  EXPECT_EQ(s.stats.kv_num_seqs, 0);
  EXPECT_EQ(s.stats.kv_free_blocks + s.stats.kv_cached_blocks, s.stats.kv_total_blocks);
  EXPECT_EQ(s.stats.num_running, 0);
  EXPECT_EQ(s.stats.num_waiting, 0);
}

}  // namespace
}  // namespace loom
