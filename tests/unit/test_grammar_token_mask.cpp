// Token masks against a brute-force oracle (every token's bytes fed to a fresh copy of the
// state) on the demo model's vocabulary, at every prefix of sample documents; the mask cache;
// and the measured per-step cost (printed), on the demo vocabulary and on SmolLM2's when the
// model file is present.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "core/formats/gguf_file.hpp"
#include "core/grammar/gbnf_text.hpp"
#include "core/grammar/json_schema_grammar.hpp"
#include "core/grammar/regex_grammar.hpp"
#include "core/grammar/token_mask.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "tests/unit/grammar_support.hpp"

namespace loom::test {
namespace {

const std::string kDemo = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";
const std::string kSmol = std::string(LOOM_SOURCE_DIR) + "/build/models/SmolLM2-135M-Instruct.Q4_1.gguf";

const char* kSchema = R"({"type": "object", "properties": {
    "name": {"type": "string", "maxLength": 12}, "age": {"type": "integer", "minimum": 0, "maximum": 150},
    "tags": {"type": "array", "items": {"enum": ["red", "green"]}, "maxItems": 3}},
  "required": ["name", "age"], "additionalProperties": false})";

std::shared_ptr<const TokenVocabulary> load_vocab(const std::string& path) {
  const GgufFile file = GgufFile::open(path);
  return std::make_shared<const TokenVocabulary>(vocabulary_of(*load_tokenizer(file)));
}

TokenMask brute_force(const GrammarMatcher& state, const TokenVocabulary& vocab) {
  TokenMask m;
  m.bits.assign((static_cast<size_t>(vocab.size()) + 63) / 64, 0);
  for (int32_t id = 0; id < vocab.size(); ++id) {
    const std::string& bytes = vocab.bytes[static_cast<size_t>(id)];
    if (bytes.empty()) continue;
    GrammarMatcher copy = state;
    if (!copy.accept_bytes(bytes)) continue;
    m.bits[static_cast<size_t>(id) >> 6] |= uint64_t{1} << (id & 63);
    ++m.allowed;
    if (m.first < 0) m.first = id;
  }
  return m;
}

struct Case {
  std::string grammar;
  std::string document;  // a sentence: the states checked are those after each of its prefixes
};

std::vector<Case> cases() {
  return {
      {json_schema_grammar(nlohmann::ordered_json::parse(kSchema)), R"({"name": "Tim \u00e9 ok", "age": 42, "tags": ["red"]})"},
      {json_object_grammar(), "{\"a\": [1, -2.5e3, {\"b\": null}], \"c\": \"d\xC3\xA9\"}"},
      {regex_grammar("(Once|One) upon a [a-z]+\\.( The end\\.)?"), "Once upon a time. The end."},
      {choice_grammar({"happy", "sad", "happily ever after"}), "happily ever after"},
      {"root ::= [^\\x00-\\x7F]+ \" \" [\\u4e00-\\u9fff]", "\xC3\xA9\xE2\x82\xAC \xE4\xB8\x80"},
  };
}

TEST(GrammarTokenMask, VocabularyBytesAreTheTokenizersPieces) {
  const GgufFile file = GgufFile::open(kDemo);
  const auto tok = load_tokenizer(file);
  const TokenVocabulary vocab = vocabulary_of(*tok);
  ASSERT_EQ(vocab.size(), tok->vocab_size());
  int lone_high_bytes = 0;
  for (int32_t id = 0; id < vocab.size(); ++id) {
    if (tok->is_eog(id)) {
      EXPECT_TRUE(vocab.bytes[static_cast<size_t>(id)].empty());
      continue;
    }
    EXPECT_EQ(vocab.bytes[static_cast<size_t>(id)], tok->token_to_piece(id, false));
    const std::string& b = vocab.bytes[static_cast<size_t>(id)];
    lone_high_bytes += b.size() == 1 && static_cast<uint8_t>(b[0]) >= 0x80;
  }
  EXPECT_EQ(lone_high_bytes, 128);  // the byte-fallback tokens <0x80>..<0xFF>
  EXPECT_EQ(vocab.eog_ids, std::vector<int32_t>{tok->eos_id()});
  // Sorted by bytes with the right shared-prefix lengths.
  for (size_t i = 1; i < vocab.order.size(); ++i) {
    const std::string& a = vocab.bytes[static_cast<size_t>(vocab.order[i - 1])];
    const std::string& b = vocab.bytes[static_cast<size_t>(vocab.order[i])];
    ASSERT_LE(a, b);
    size_t n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n]) ++n;
    ASSERT_EQ(vocab.common_prefix[i], n);
  }
}

TEST(GrammarTokenMask, EqualsBruteForceAtEveryPrefix) {
  const auto vocab = load_vocab(kDemo);
  for (const Case& c : cases()) {
    const auto g = gbnf(c.grammar);
    GrammarMatcher state(g);
    for (size_t i = 0; i <= c.document.size(); ++i) {
      const TokenMask fast = compute_token_mask(*g, state.stacks(), *vocab);
      const TokenMask slow = brute_force(state, *vocab);
      ASSERT_EQ(fast.bits, slow.bits) << c.document.substr(0, i);
      ASSERT_EQ(fast.allowed, slow.allowed);
      ASSERT_EQ(fast.first, slow.first);
      if (i < c.document.size()) {
        ASSERT_TRUE(state.accept_byte(static_cast<uint8_t>(c.document[i]))) << i;
      }
    }
    EXPECT_TRUE(state.is_complete()) << c.document;
  }
}

TEST(GrammarTokenMask, CacheKeysByCanonicalState) {
  const auto vocab = load_vocab(kDemo);
  const auto g = gbnf("root ::= \"[\" [a-z]* \"]\"");
  MaskCache cache(g, vocab);
  GrammarMatcher m(g);
  ASSERT_TRUE(m.accept_byte('['));
  const TokenMask first = cache.mask(m.stacks());
  ASSERT_TRUE(m.accept_bytes("abc"));  // inside [a-z]*: the same state again
  const TokenMask& again = cache.mask(m.stacks());
  EXPECT_EQ(again.bits, first.bits);
  EXPECT_EQ(cache.misses(), 1u);
  EXPECT_EQ(cache.hits(), 1u);
  EXPECT_GT(first.allowed, 0);
}

// Prints the per-step cost: a cold mask (computed), a warm one (cache lookup), for 1 and 16
// requests in distinct states of the schema above.
void report_cost(const std::string& label, const std::shared_ptr<const TokenVocabulary>& vocab) {
  const auto g = gbnf(json_schema_grammar(nlohmann::ordered_json::parse(kSchema)));
  const std::string doc = R"({"name": "Tim", "age": 42, "tags": ["red", "green"]})";
  std::vector<GrammarMatcher> states;
  GrammarMatcher m(g);
  for (size_t i = 0; i < 16; ++i) {
    states.push_back(m);
    for (size_t k = 0; k < 3; ++k) ASSERT_TRUE(m.accept_byte(static_cast<uint8_t>(doc[i * 3 + k])));
  }
  using Clock = std::chrono::steady_clock;
  for (const size_t batch : {size_t{1}, size_t{16}}) {
    MaskCache cache(g, vocab);
    auto t0 = Clock::now();
    int64_t allowed = 0;
    for (size_t r = 0; r < batch; ++r) allowed += cache.mask(states[r].stacks()).allowed;
    auto t1 = Clock::now();
    constexpr int kReps = 100;
    for (int rep = 0; rep < kReps; ++rep) {
      for (size_t r = 0; r < batch; ++r) allowed += cache.mask(states[r].stacks()).allowed;
    }
    auto t2 = Clock::now();
    const double cold = std::chrono::duration<double, std::milli>(t1 - t0).count();
    const double warm = std::chrono::duration<double, std::milli>(t2 - t1).count() / kReps;
    std::printf("[mask cost] %s vocab %d, batch %zu: cold %.3f ms/step (%.3f ms/mask), cached %.4f ms/step (allowed sum %lld)\n",
                label.c_str(), vocab->size(), batch, cold, cold / static_cast<double>(batch), warm,
                static_cast<long long>(allowed));
    EXPECT_GT(allowed, 0);
  }
}

TEST(GrammarTokenMask, ReportsPerStepCostOnTheDemoVocabulary) { report_cost("stories260K", load_vocab(kDemo)); }

TEST(GrammarTokenMask, ReportsPerStepCostOnSmolLM2) {
  if (!std::filesystem::exists(kSmol)) GTEST_SKIP() << kSmol << " is missing (tools/fetch-model.sh fetches it)";
  report_cost("SmolLM2-135M", load_vocab(kSmol));
}

}  // namespace
}  // namespace loom::test
