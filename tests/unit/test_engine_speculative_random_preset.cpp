// Speculation stays lossless on a model that is not the demo one: the random-weight `tiny` preset
// (dim 64, 2 layers, GQA 8/4, f32; stories260K's tokenizer) on n-gram-friendly prompts, a random
// token span repeated (what a rewrite or extraction of a given text looks like to prompt lookup).
// With ngram, suffix and a draft model (the same file quantized to int8 as it loads), greedy
// output is byte for byte the output without a speculator, alone and 16 requests at a time; the
// drafts must be accepted (the prompts are built for it) and every block must be back at the end.
#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "tests/unit/speculation_harness.hpp"

namespace loom {
namespace {

constexpr int kNumPrompts = 24;

// The preset written once per process to a temporary file (the engine loads models by path),
// removed when the process ends.
struct TemporaryModel {
  std::string path;
  ~TemporaryModel() { std::filesystem::remove(path); }
};

const std::string& tiny_model_path() {
  static const TemporaryModel model{[] {
    RandomLlamaOptions opts;
    opts.shape = llama_preset("tiny");
    opts.dtype = LOOM_DTYPE_F32;
    opts.seed = 11;
    opts.init_std = 0.2f;  // peaked logits: greedy output that depends on the context
    opts.name = "tiny";
    const GgufMetadata tok = tokenizer_metadata(GgufFile::open(std::string(LOOM_TEST_DATA) + "/stories260K.gguf"));
    const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                       ("loom-spec-tiny-" + std::to_string(::getpid()) + ".gguf");
    random_llama_gguf(opts, tok).write(file.string());
    return file.string();
  }()};
  return model.path;
}

// A random span of 6..29 ordinary tokens, then the span again, then its first half: the
// continuation the prompt suggests is the span's second half.
std::vector<std::vector<int32_t>> repeated_spans(const Tokenizer&) {
  std::mt19937 gen(5);
  std::uniform_int_distribution<int32_t> token(3, 511), length(6, 29);
  std::vector<std::vector<int32_t>> prompts;
  for (int i = 0; i < kNumPrompts; ++i) {
    std::vector<int32_t> span(static_cast<size_t>(length(gen)));
    for (int32_t& t : span) t = token(gen);
    std::vector<int32_t> p = {1};  // BOS
    p.insert(p.end(), span.begin(), span.end());
    p.insert(p.end(), span.begin(), span.end());
    p.insert(p.end(), span.begin(), span.begin() + static_cast<std::ptrdiff_t>(span.size() / 2));
    prompts.push_back(std::move(p));
  }
  return prompts;
}

test::SpecRun run(const std::string& speculator, int concurrency) {
  test::SpecRunOptions o;
  o.concurrency = concurrency;
  o.stop = {};
  return test::run_prompts(test::spec_engine_config(tiny_model_path(), speculator), repeated_spans, o);
}

const test::SpecRun& reference() {
  static const test::SpecRun r = run("", 1);
  return r;
}

struct PresetCase {
  std::string name;
  std::string plugin;
  int k;
  int concurrency;
};

void PrintTo(const PresetCase& c, std::ostream* os) { *os << c.name; }

class RandomPresetSpeculation : public ::testing::TestWithParam<PresetCase> {};

TEST_P(RandomPresetSpeculation, GreedyOutputIsByteIdentical) {
  const PresetCase& c = GetParam();
  const test::SpecRun& plain = reference();
  ASSERT_EQ(plain.outputs.size(), static_cast<size_t>(kNumPrompts));
  // The draft is the same file quantized to int8 as it loads: close to the target, not equal.
  const std::string keys = c.plugin == "draft" ? "model = \"" + tiny_model_path() + "\"\nquantization = \"int8\"\n" : "";
  const test::SpecRun spec = run(test::spec_table(c.plugin, c.k, keys), c.concurrency);
  test::expect_same_outputs(plain, spec);
  const SpecDecodeStats& s = spec.stats.spec_decode;
  EXPECT_GT(s.num_drafts, 0);
  EXPECT_GT(s.num_accepted_tokens, 0) << "no draft was ever accepted";
  EXPECT_LT(s.num_accepted_tokens, s.num_draft_tokens) << "no draft was ever rejected: rollback untested";
  EXPECT_EQ(spec.stats.generation_tokens_total, plain.stats.generation_tokens_total);
  EXPECT_EQ(spec.stats.kv_used_blocks, 0);
  EXPECT_EQ(spec.stats.kv_num_seqs, 0);
  EXPECT_EQ(spec.stats.kv_free_blocks + spec.stats.kv_cached_blocks, spec.stats.kv_total_blocks);
}

INSTANTIATE_TEST_SUITE_P(
    TinyPreset, RandomPresetSpeculation,
    ::testing::Values(PresetCase{"ngram_k4_alone", "ngram", 4, 1}, PresetCase{"ngram_k4_concurrent16", "ngram", 4, 16},
                      PresetCase{"suffix_k4_concurrent16", "suffix", 4, 16},
                      PresetCase{"draft_int8_k3_concurrent16", "draft", 3, 16}),
    [](const ::testing::TestParamInfo<PresetCase>& info) { return info.param.name; });

}  // namespace
}  // namespace loom
