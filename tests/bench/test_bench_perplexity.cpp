// loom-bench perplexity on the demo model (stories260K, f32) and the held-out TinyStories-style
// text tests/data/heldout_stories.txt: a fixed, finite value, every token scored once whatever
// the window, and a shuffled text far less likely than the real one.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <random>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "tools/bench/model/perplexity.hpp"

namespace loom::bench {
namespace {

const std::string kModel = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";
const std::string kText = std::string(LOOM_TEST_DATA) + "/heldout_stories.txt";

// Printed by `loom-bench perplexity --model tests/data/stories260K.gguf --text
// tests/data/heldout_stories.txt` (f32 weights, f32 KV, ctx 512: 2179 tokens, 5 windows);
// llama.cpp (llama-cpp-python, logits_all, the same windows) gives 4.60702 on this file. The
// tolerance covers kernel differences between CPUs (AVX2 vs portable summation order), which
// move it in the 5th digit.
constexpr double kHeldoutPerplexity = 4.6070;
constexpr double kTolerance = 0.01;

std::string read_text() {
  std::ifstream in(kText, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

PerplexityOptions options(int32_t ctx = 0) {
  PerplexityOptions o;
  o.model = kModel;
  o.text = kText;
  o.ctx = ctx;
  o.threads = 2;
  return o;
}

TEST(BenchPerplexity, DemoModelOnHeldoutTextIsTheRecordedValue) {
  PerplexityRun run(options());
  const std::vector<int32_t> ids = run.tokenize(read_text());
  ASSERT_GT(ids.size(), 500u);
  const PerplexityResult r = run.score(ids);
  EXPECT_EQ(r.tokens, static_cast<int64_t>(ids.size()));  // every token once (the model has BOS)
  EXPECT_EQ(r.ctx, 512);
  EXPECT_EQ(r.windows, static_cast<int32_t>((ids.size() + 510) / 511));
  ASSERT_TRUE(std::isfinite(r.perplexity));
  EXPECT_NEAR(r.perplexity, kHeldoutPerplexity, kTolerance);
}

TEST(BenchPerplexity, ShuffledTokensAreFarLessLikely) {
  PerplexityRun run(options());
  std::vector<int32_t> ids = run.tokenize(read_text());
  const double real = run.score(ids).perplexity;
  std::mt19937 rng(7);
  std::shuffle(ids.begin(), ids.end(), rng);
  const double shuffled = run.score(ids).perplexity;
  EXPECT_GT(shuffled, 3.0 * real) << "real " << real << ", shuffled " << shuffled;
}

TEST(BenchPerplexity, ShorterWindowsScoreEveryTokenOnceWithLessContext) {
  PerplexityRun long_run(options());
  PerplexityRun short_run(options(17));
  const std::vector<int32_t> ids = short_run.tokenize(read_text());
  const PerplexityResult s = short_run.score(ids);
  EXPECT_EQ(s.tokens, static_cast<int64_t>(ids.size()));
  EXPECT_EQ(s.windows, static_cast<int32_t>((ids.size() + 15) / 16));
  // 16 tokens of context at most predict worse than up to 511.
  EXPECT_GT(s.perplexity, long_run.score(ids).perplexity);
}

// -log softmax(row)[target], computed here independently of the tool.
double nll_of(std::span<const float> row, int32_t target) {
  const float max = *std::max_element(row.begin(), row.end());
  double sum = 0.0;
  for (float v : row) sum += std::exp(static_cast<double>(v) - max);
  return std::log(sum) - (static_cast<double>(row[static_cast<size_t>(target)]) - max);
}

// llama-perplexity's windows: the text with BOS, chunks of ctx tokens (tail dropped), first token
// BOS, only positions ctx/2 .. ctx-2 scored; each window dumped with its ids and logits.
TEST(BenchPerplexity, LlamaWindowsScoreTheSecondHalfOfEachChunkAndDumpThem) {
  constexpr int32_t kCtx = 64;
  PerplexityRun run(options(kCtx));
  const std::vector<int32_t> ids = run.tokenize_with_specials(read_text());
  ASSERT_EQ(ids.front(), 1);  // the demo model adds BOS (id 1)
  const std::string prefix = ::testing::TempDir() + "/ppl_llama_windows";
  run.dump_windows_to(prefix);
  const PerplexityResult r = run.score_llama_windows(ids);
  const auto chunks = static_cast<int32_t>(ids.size() / kCtx);
  EXPECT_EQ(r.windows, chunks);
  EXPECT_EQ(r.tokens, static_cast<int64_t>(chunks) * (kCtx - 1 - kCtx / 2));

  // The same figure from each chunk's logits (BOS replacing its first token), scored by hand.
  PerplexityRun check(options(kCtx));
  const auto vocab = static_cast<size_t>(check.vocab());
  double nll = 0.0;
  for (int32_t c = 0; c < chunks; ++c) {
    const auto* chunk = ids.data() + static_cast<size_t>(c) * kCtx;
    const std::span<const float> logits = check.window_logits({chunk + 1, static_cast<size_t>(kCtx - 1)});
    for (int32_t i = kCtx / 2; i + 1 < kCtx; ++i)
      nll += nll_of(logits.subspan(static_cast<size_t>(i) * vocab, vocab), chunk[i + 1]);
  }
  EXPECT_NEAR(r.nll, nll, 1e-9 * nll);

  // The dump: one line of kCtx ids per chunk, BOS first, the chunk's own tokens after it.
  std::ifstream id_file(prefix + ".ids");
  std::string line;
  int32_t lines = 0;
  while (std::getline(id_file, line)) {
    std::istringstream in(line);
    std::vector<int32_t> window;
    for (int32_t t; in >> t;) window.push_back(t);
    ASSERT_EQ(window.size(), static_cast<size_t>(kCtx));
    EXPECT_EQ(window[0], 1);
    EXPECT_TRUE(std::equal(window.begin() + 1, window.end(), ids.begin() + lines * kCtx + 1));
    ++lines;
  }
  EXPECT_EQ(lines, chunks);
  std::ifstream logit_file(prefix + ".f32", std::ios::binary | std::ios::ate);
  EXPECT_EQ(static_cast<size_t>(logit_file.tellg()), static_cast<size_t>(chunks) * kCtx * vocab * sizeof(float));
}

TEST(BenchPerplexity, LlamaWindowsNeedTwoChunks) {
  PerplexityRun run(options(64));
  const std::vector<int32_t> ids = run.tokenize_with_specials("Once upon a time.");
  EXPECT_THROW(run.score_llama_windows(ids), Error);
}

TEST(BenchPerplexity, OptionsAreChecked) {
  const char* missing_text[] = {"perplexity", "--model", "m.gguf"};
  EXPECT_THROW(parse_perplexity_options(3, const_cast<char**>(missing_text)), Error);
  const char* bad_kv[] = {"perplexity", "--model", "m.gguf", "--text", "t", "--kv-dtype", "q4"};
  try {
    parse_perplexity_options(7, const_cast<char**>(bad_kv));
    FAIL() << "a bad --kv-dtype was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"q4\""), std::string::npos) << e.what();
  }
  const char* ok[] = {"perplexity", "--model", "m.gguf", "--text", "t", "--ctx", "64", "--kv-dtype", "int8"};
  const PerplexityOptions o = parse_perplexity_options(9, const_cast<char**>(ok));
  EXPECT_EQ(o.ctx, 64);
  EXPECT_EQ(o.kv_dtype, "int8");
}

}  // namespace
}  // namespace loom::bench
