// Streaming detokenization: the deltas concatenate to decode(prompt + generated) minus
// decode(prompt), never split a UTF-8 character, and turn dead sequences into one U+FFFD.
#include <gtest/gtest.h>

#include <cstdio>
#include <random>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/tokenizer/incremental_detokenizer.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom {
namespace {

constexpr const char* kSp = "\xE2\x96\x81";  // U+2581
const std::string kFffd = "\xEF\xBF\xBD";
constexpr int32_t kBos = 1;
constexpr int32_t kEos = 2;
int32_t byte_id(uint8_t b) { return 3 + b; }

// <unk> <s> </s>, 256 byte tokens, then a few words.
SpmTokenizer make_tokenizer() {
  SpmVocab v;
  auto add = [&](std::string text, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(-1.0f);
    v.types.push_back(type);
  };
  add("<unk>", TokenType::kUnknown);
  add("<s>", TokenType::kControl);
  add("</s>", TokenType::kControl);
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof(name), "<0x%02X>", b);
    add(name, TokenType::kByte);
  }
  for (const char* w : {"Once", "upon", "a", "time", ""}) add(std::string(kSp) + w, TokenType::kNormal);
  add("\xC3\xA9", TokenType::kNormal);  // é
  v.unk_id = 0;
  v.bos_id = kBos;
  v.eos_id = kEos;
  return SpmTokenizer(std::move(v));
}

struct Stream {
  std::vector<std::string> deltas;
  std::string text() const {
    std::string s;
    for (const auto& d : deltas) s += d;
    return s;
  }
};

Stream run(const Tokenizer& tok, const std::vector<int32_t>& prompt,
           const std::vector<int32_t>& generated) {
  IncrementalDetokenizer detok(tok, prompt);
  Stream s;
  for (const int32_t id : generated) s.deltas.push_back(detok.push(id));
  s.deltas.push_back(detok.flush());
  return s;
}

// Requests hold one each and move around in containers.
static_assert(std::is_copy_constructible_v<IncrementalDetokenizer>);
static_assert(std::is_move_assignable_v<IncrementalDetokenizer>);

class Detokenizer : public ::testing::Test {
 protected:
  SpmTokenizer tok_ = make_tokenizer();
  int32_t id(const std::string& word) const { return tok_.find_token(std::string(kSp) + word); }
};

TEST_F(Detokenizer, AfterBosOnlyTheLeadingSpaceIsDropped) {
  const Stream s = run(tok_, {kBos}, {id("Once"), id("upon"), id("a")});
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"Once", " upon", " a", ""}));
}

TEST_F(Detokenizer, AfterTextTheSpaceIsKept) {
  const std::vector<int32_t> prompt{kBos, id("Once"), id("upon")};
  const std::vector<int32_t> gen{id("a"), id("time"), kEos};
  const Stream s = run(tok_, prompt, gen);
  EXPECT_EQ(s.deltas, (std::vector<std::string>{" a", " time", "", ""}));
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen.begin(), gen.end());
  EXPECT_EQ(s.text(), tok_.decode(all).substr(tok_.decode(prompt).size()));
}

TEST_F(Detokenizer, EmptyPromptAndInvisibleTokensFirst) {
  EXPECT_EQ(run(tok_, {}, {id("time")}).text(), "time");
  // BOS, EOS, <unk> decode to nothing and do not use up the leading-space rule.
  EXPECT_EQ(run(tok_, {}, {kBos, 0, id("a"), id("a")}).deltas,
            (std::vector<std::string>{"", "", "a", " a", ""}));
  // A lone marker consumes it: " a" stays " a" (as decode does).
  EXPECT_EQ(run(tok_, {kBos}, {id(""), id("a")}).text(), " a");
  EXPECT_EQ(run(tok_, {kBos}, {id(""), id("a")}).text(),
            tok_.decode(std::vector<int32_t>{kBos, id(""), id("a")}));
}

TEST_F(Detokenizer, ByteTokensAreHeldUntilTheCharacterIsComplete) {
  // U+1F600 as four byte-fallback tokens, between words.
  const Stream s = run(tok_, {kBos, id("a")},
                       {byte_id(0xF0), byte_id(0x9F), byte_id(0x98), byte_id(0x80), id("a")});
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"", "", "", "\xF0\x9F\x98\x80", " a", ""}));
}

TEST_F(Detokenizer, PendingBytesAreReported) {
  IncrementalDetokenizer d(tok_, std::vector<int32_t>{kBos});
  EXPECT_EQ(d.push(byte_id(0xC3)), "");
  EXPECT_EQ(d.pending_bytes(), 1u);
  EXPECT_EQ(d.push(byte_id(0xA9)), "\xC3\xA9");
  EXPECT_EQ(d.pending_bytes(), 0u);
}

TEST_F(Detokenizer, DeadSequenceBecomesOneReplacementWhenItCanNoLongerComplete) {
  // F0 9F then a word: the two bytes can never complete -> one U+FFFD, then the word.
  const Stream s = run(tok_, {kBos, id("a")}, {byte_id(0xF0), byte_id(0x9F), id("a")});
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"", "", kFffd + " a", ""}));
  // A stray continuation byte is dead at once.
  EXPECT_EQ(run(tok_, {kBos, id("a")}, {byte_id(0x80)}).deltas,
            (std::vector<std::string>{kFffd, ""}));
  // Invalid lead followed by a valid character.
  EXPECT_EQ(run(tok_, {kBos, id("a")}, {byte_id(0xFF), id("time")}).text(), kFffd + " time");
}

TEST_F(Detokenizer, FlushTurnsAnIncompleteTailIntoOneReplacement) {
  const Stream s = run(tok_, {kBos, id("a")}, {byte_id(0xE2), byte_id(0x96)});
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"", "", kFffd}));
  IncrementalDetokenizer d(tok_, std::vector<int32_t>{kBos});
  EXPECT_EQ(d.flush(), "");  // nothing held
}

TEST_F(Detokenizer, PromptEndingInsideACharacterCompletesIt) {
  // The prompt ends with the lead byte of "é" (C3); the generation brings the second byte.
  const Stream s = run(tok_, {kBos, id("a"), byte_id(0xC3)}, {byte_id(0xA9), id("a")});
  EXPECT_EQ(s.deltas, (std::vector<std::string>{"\xC3\xA9", " a", ""}));
  // If the generation does not complete it, the prompt's byte is not the generation's to show.
  EXPECT_EQ(run(tok_, {kBos, id("a"), byte_id(0xC3)}, {id("a")}).text(), " a");
  EXPECT_EQ(run(tok_, {kBos, id("a"), byte_id(0xF0)}, {byte_id(0x9F), id("a")}).text(),
            kFffd + " a");  // a generated byte took part: the dead sequence is shown
}

TEST_F(Detokenizer, MatchesWholeDecodeOnAMixedStream) {
  const std::vector<int32_t> prompt{kBos};
  std::vector<int32_t> gen{id("Once"), byte_id(0xC3), byte_id(0xA9), id(""), byte_id(0xF0),
                           byte_id(0x9F), byte_id(0xA6), byte_id(0x99), id("upon"),
                           tok_.find_token("\xC3\xA9"), kEos};
  const Stream s = run(tok_, prompt, gen);
  std::vector<int32_t> all = prompt;
  all.insert(all.end(), gen.begin(), gen.end());
  EXPECT_EQ(s.text(), tok_.decode(all));
  EXPECT_EQ(s.text(), "Once\xC3\xA9 \xF0\x9F\xA6\x99 upon\xC3\xA9");
  for (const std::string& d : s.deltas) EXPECT_TRUE(d.empty() || d.back() != '\xC3');
}

TEST_F(Detokenizer, RenderSpecialShowsControlText) {
  IncrementalDetokenizer d(tok_, std::vector<int32_t>{kBos}, /*render_special=*/true);
  // "<s>" counts as the first visible text, so the word keeps its space.
  EXPECT_EQ(d.push(id("a")), " a");
  EXPECT_EQ(d.push(kEos), "</s>");
}

TEST_F(Detokenizer, RandomStreamsEqualSanitizedWholeDecode) {
  // Property: the deltas are exactly the sanitized decode of the whole sequence minus the
  // prompt's text, for any mix of words, partial characters and invalid bytes.
  const std::vector<int32_t> pool{id("a"), id("time"), id(""), kEos, 0,
                                  byte_id(0xC3), byte_id(0xA9), byte_id(0xF0), byte_id(0x9F),
                                  byte_id(0x98), byte_id(0x80), byte_id(0xE2), byte_id(0xFF),
                                  byte_id('x'), tok_.find_token("\xC3\xA9")};
  std::mt19937 rng(42);
  for (int round = 0; round < 500; ++round) {
    std::vector<int32_t> prompt{kBos};
    const int n_prompt = static_cast<int>(rng() % 3);
    for (int i = 0; i < n_prompt; ++i) prompt.push_back(rng() % 2 ? id("Once") : id("upon"));
    std::vector<int32_t> gen;
    const int n_gen = static_cast<int>(rng() % 10);
    for (int i = 0; i < n_gen; ++i) gen.push_back(pool[rng() % pool.size()]);
    std::vector<int32_t> all = prompt;
    all.insert(all.end(), gen.begin(), gen.end());
    const std::string expected = utf8_sanitize(tok_.decode(all)).substr(tok_.decode(prompt).size());
    const Stream s = run(tok_, prompt, gen);
    ASSERT_EQ(s.text(), expected) << "round " << round;
    for (size_t i = 0; i + 1 < s.deltas.size(); ++i) EXPECT_TRUE(utf8_is_valid(s.deltas[i]));
  }
}

TEST_F(Detokenizer, LongStreamIsLinear) {
  // 200k tokens; re-decoding per step would be quadratic and take minutes.
  IncrementalDetokenizer d(tok_, std::vector<int32_t>{kBos});
  size_t total = 0;
  for (int i = 0; i < 200000; ++i) total += d.push(i % 3 == 0 ? id("a") : byte_id('x')).size();
  EXPECT_EQ(total, 200000u + 200000u / 3);  // every "a" has its space except the first
}

}  // namespace
}  // namespace loom
