// Speculative decoding is lossless for greedy requests: with each in-tree speculator (the draft
// model as a quantized copy of the target) and several k, 50 prompts give byte for byte the token
// ids and text they give without a speculator, each alone and 16 at a time, on the demo model
// (stories260K, f32 CPU path). The drafts must actually be accepted (a test that speculates
// nothing proves nothing), the paged cache checks its invariants after every change, and every
// block is back when the engine stops.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/unit/speculation_harness.hpp"

namespace loom {
namespace {

constexpr int kNumPrompts = 50;

using Output = test::SpecOutput;
using RunResult = test::SpecRun;

// 50 prompts: the opening words of the held-out stories' sentences, 4 to 40 tokens.
std::vector<std::string> prompt_texts() {
  std::ifstream in(std::string(LOOM_TEST_DATA) + "/heldout_stories.txt");
  std::stringstream all;
  all << in.rdbuf();
  const std::string text = all.str();
  std::vector<std::string> out;
  size_t start = 0;
  for (int i = 0; out.size() < kNumPrompts && start < text.size(); ++i) {
    size_t end = text.find_first_of(".!?\n", start);
    if (end == std::string::npos) end = text.size();
    std::string sentence = text.substr(start, end - start);
    start = end + 1;
    while (!sentence.empty() && (sentence.front() == ' ' || sentence.front() == '"')) sentence.erase(0, 1);
    if (sentence.size() < 8) continue;
    // Cut at a word boundary, 20..120 characters in, so prompts differ in length.
    const size_t cut = sentence.find(' ', 20 + static_cast<size_t>(i * 37) % 100);
    out.push_back(cut == std::string::npos ? sentence : sentence.substr(0, cut));
  }
  return out;
}

std::string config_text(const std::string& speculator, const std::string& cache_path = "") {
  return test::spec_engine_config(std::string(LOOM_TEST_DATA) + "/stories260K.gguf", speculator, cache_path);
}

// Runs the prompts, `concurrency` at a time, 48 new tokens (EOS and "\n\n" honoured).
RunResult run(const std::string& toml, int concurrency, bool opt_out = false, float temperature = 0.0f) {
  const auto prompts = [](const Tokenizer& tok) {
    std::vector<std::vector<int32_t>> ids;
    for (const std::string& text : prompt_texts()) ids.push_back(tok.encode(text, true));
    return ids;
  };
  return test::run_prompts(toml, prompts, {.concurrency = concurrency, .opt_out = opt_out, .temperature = temperature});
}

const RunResult& reference() {
  static const RunResult r = run(config_text(""), 1);
  return r;
}

std::string table(const std::string& plugin, int k, const std::string& extra = "") {
  return test::spec_table(plugin, k, extra);
}

// The draft speculator's keys: the demo model again, quantized to int8 as it loads.
std::string draft_keys() {
  return "model = \"" + std::string(LOOM_TEST_DATA) + "/stories260K.gguf\"\nquantization = \"int8\"\n";
}

struct SpecCase {
  std::string name;
  std::string table;  // the [speculator] table
  int concurrency;
  std::string cache_path = "";  // a [cache] path: the paged cache built against an older interface
  // Drafts must be made, accepted and rejected. Not with adaptation on: whether drafting pays is
  // measured (step times, proposal costs), and under a sanitizer at 16 requests it may not.
  bool must_speculate = true;
};

void PrintTo(const SpecCase& c, std::ostream* os) { *os << c.name; }

class GreedySpeculation : public ::testing::TestWithParam<SpecCase> {};

TEST_P(GreedySpeculation, OutputIsByteIdenticalToPlainGreedy) {
  const SpecCase& c = GetParam();
  const RunResult& plain = reference();
  ASSERT_EQ(plain.outputs.size(), static_cast<size_t>(kNumPrompts));
  const RunResult spec = run(config_text(c.table, c.cache_path), c.concurrency);
  test::expect_same_outputs(plain, spec);
  const SpecDecodeStats& s = spec.stats.spec_decode;
  EXPECT_TRUE(s.enabled);
  EXPECT_EQ(spec.stats.kv_used_blocks, 0);
  EXPECT_EQ(spec.stats.kv_num_seqs, 0);
  EXPECT_EQ(spec.stats.kv_free_blocks + spec.stats.kv_cached_blocks, spec.stats.kv_total_blocks);
  EXPECT_EQ(spec.stats.generation_tokens_total, plain.stats.generation_tokens_total);
  if (!c.must_speculate) return;
  EXPECT_GT(s.num_drafts, 0);
  EXPECT_GT(s.num_accepted_tokens, 0) << "no draft was ever accepted";
  EXPECT_LT(s.num_accepted_tokens, s.num_draft_tokens) << "no draft was ever rejected: rollback untested";
  int64_t per_pos = 0;
  for (int64_t n : s.accepted_per_pos) per_pos += n;
  EXPECT_EQ(per_pos, s.num_accepted_tokens);
  // A step that accepts drafts streams its tokens as one chunk: fewer chunks than tokens.
  int multi = 0;
  for (size_t i = 0; i < spec.outputs.size(); ++i)
    multi += spec.outputs[i].chunks < static_cast<int>(spec.outputs[i].ids.size()) ? 1 : 0;
  EXPECT_GT(multi, 0) << "every accepted token was streamed in a chunk of its own";
  // Without a speculator each chunk holds one token, or a final chunk none.
  for (size_t i = 0; i < plain.outputs.size(); ++i)
    EXPECT_GE(plain.outputs[i].chunks, static_cast<int>(plain.outputs[i].ids.size())) << "prompt " << i;
  // Inter-token latency has one gap per step with output: fewer than tokens once steps accept drafts.
  EXPECT_LT(spec.stats.inter_token_latency.count, plain.stats.inter_token_latency.count);
}


// Greedy rows verifying drafts take the head's selection (runtime.head_top_k, on by default):
// the output equals plain greedy decoding that computes every logits row whole.
TEST(GreedySpeculation, SelectedRowsVerifyAsWholeRowsDecode) {
  std::string whole = config_text("");
  const std::string seed = "seed = 7\n";
  whole.replace(whole.find(seed), seed.size(), seed + "head_top_k = 0\n");
  const RunResult plain = run(whole, 1);
  const RunResult spec = run(config_text(table("ngram", 3)), 16);
  test::expect_same_outputs(plain, spec);
  EXPECT_GT(spec.stats.spec_decode.num_accepted_tokens, 0);
  EXPECT_LT(spec.stats.spec_decode.num_accepted_tokens, spec.stats.spec_decode.num_draft_tokens);
}

// The request field speculative_decoding = false: the same output, and no draft for it at all.
TEST(GreedySpeculationOptOut, OptedOutRequestsAreNeverSpeculated) {
  const RunResult spec = run(config_text(table("ngram", 3)), 16, /*opt_out=*/true);
  for (size_t i = 0; i < reference().outputs.size(); ++i) EXPECT_EQ(spec.outputs[i].ids, reference().outputs[i].ids);
  EXPECT_TRUE(spec.stats.spec_decode.enabled);
  EXPECT_EQ(spec.stats.spec_decode.num_drafts, 0);
  EXPECT_EQ(spec.stats.spec_decode.num_steps, 0);
}

// Sampled requests verify by rejection sampling from their own seeded generator: the same seeds
// give the same output, and drafts are still accepted (and some rejected).
TEST(SampledSpeculation, SeededRequestsAreReproducible) {
  const std::string toml = config_text(table("ngram", 3));
  const RunResult a = run(toml, 1, false, 0.7f), b = run(toml, 1, false, 0.7f);
  for (size_t i = 0; i < a.outputs.size(); ++i) {
    EXPECT_EQ(a.outputs[i].error, "");
    EXPECT_EQ(a.outputs[i].ids, b.outputs[i].ids) << "prompt " << i;
  }
  EXPECT_GT(a.stats.spec_decode.num_accepted_tokens, 0);
  EXPECT_LT(a.stats.spec_decode.num_accepted_tokens, a.stats.spec_decode.num_draft_tokens);
}

std::vector<SpecCase> cases() {
  std::vector<SpecCase> all = {
      {"ngram_k1_alone", table("ngram", 1), 1},
      {"ngram_k3_alone", table("ngram", 3), 1},
      {"ngram_k5_alone", table("ngram", 5, "min_n = 2\nmax_n = 3\n"), 1},
      {"ngram_k3_concurrent16", table("ngram", 3), 16},
      {"ngram_k8_concurrent16", table("ngram", 8), 16},
      {"suffix_k2_alone", table("suffix", 2), 1},
      {"suffix_k4_alone", table("suffix", 4), 1},
      {"suffix_k4_concurrent16", table("suffix", 4, "min_token_prob = 0.0\n"), 16},
      {"suffix_k6_concurrent16", table("suffix", 6), 16},
      {"ngram_adaptive_concurrent16", "[speculator]\nplugin = \"ngram\"\n", 16, "", false},
      // The draft is a quantized copy of the target (int8 weights): close enough to be
      // accepted often, different enough to be rejected too.
      {"draft_int8_k3_alone", table("draft", 3, draft_keys()), 1},
      {"draft_int8_k2_concurrent16", table("draft", 2, draft_keys()), 16},
      {"draft_int8_k5_concurrent16", table("draft", 5, draft_keys()), 16},
  };
#ifdef LOOM_CACHE_1_2_PLUGIN
  all.push_back({"ngram_k4_cache_1_2_without_trim", table("ngram", 4), 16, LOOM_CACHE_1_2_PLUGIN});
#endif
  return all;
}

INSTANTIATE_TEST_SUITE_P(Speculators, GreedySpeculation, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<SpecCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom
