// SentencePiece-BPE tokenizer on small synthetic vocabularies: merge order, byte fallback,
// special tokens, BOS/EOS and the decode rules. The real-vocabulary oracle is in
// test_model_tokenizer_gguf.cpp.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"

namespace loom {
namespace {

constexpr const char* kSp = "\xE2\x96\x81";  // U+2581

std::string sp(const std::string& rest) { return kSp + rest; }

// ids 0..2 = <unk> <s> </s>; then (optionally) 256 byte tokens; then `normal` in order.
SpmVocab make_vocab(const std::vector<std::pair<std::string, float>>& normal,
                    bool byte_tokens = true) {
  SpmVocab v;
  auto add = [&](std::string text, float score, TokenType type) {
    v.tokens.push_back(std::move(text));
    v.scores.push_back(score);
    v.types.push_back(type);
  };
  add("<unk>", 0, TokenType::kUnknown);
  add("<s>", 0, TokenType::kControl);
  add("</s>", 0, TokenType::kControl);
  if (byte_tokens) {
    for (int b = 0; b < 256; ++b) {
      char name[8];
      std::snprintf(name, sizeof(name), "<0x%02X>", b);
      add(name, 0, TokenType::kByte);
    }
  }
  for (const auto& [text, score] : normal) add(text, score, TokenType::kNormal);
  v.unk_id = 0;
  v.bos_id = 1;
  v.eos_id = 2;
  return v;
}

std::vector<std::string> texts(const SpmTokenizer& tok, const std::vector<int32_t>& ids) {
  std::vector<std::string> out;
  for (const int32_t id : ids) out.push_back(tok.token_text(id));
  return out;
}

using Texts = std::vector<std::string>;

TEST(SpmTokenizer, HigherScoreMergesFirst) {
  // "bc" outranks "ab", and "abc" is not a token: a|bc, not ab|c.
  SpmVocab v = make_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"ab", -1}, {"bc", -0.5f}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("abc", false)), (Texts{"a", "bc"}));
}

TEST(SpmTokenizer, ScoreOrderNotVocabOrderDecides) {
  SpmVocab v = make_vocab({{"a", -5}, {"b", -5}, {"c", -5}, {"bc", -2}, {"ab", -1}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("abc", false)), (Texts{"ab", "c"}));
}

TEST(SpmTokenizer, EqualScoresMergeLeftmostFirst) {
  SpmVocab v = make_vocab({{"a", -5}, {"aa", -1}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("aaa", false)), (Texts{"aa", "a"}));
  EXPECT_EQ(texts(tok, tok.encode("aaaaa", false)), (Texts{"aa", "aa", "a"}));
}

TEST(SpmTokenizer, MergedSymbolsMergeAgain) {
  // ab, then cd, then ab+cd; "bc" is a token with a lower score than the others.
  SpmVocab v = make_vocab(
      {{"a", -9}, {"b", -9}, {"c", -9}, {"d", -9}, {"ab", -1}, {"cd", -2}, {"bc", -3}, {"abcd", -4}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("abcd", false)), (Texts{"abcd"}));
  EXPECT_EQ(texts(tok, tok.encode("abcdab", false)), (Texts{"abcd", "ab"}));
}

TEST(SpmTokenizer, SpacesBecomeMarkersAndPrefixIsAdded) {
  SpmTokenizer tok(make_vocab({{sp(""), -9}, {"a", -9}, {"b", -9}, {sp("a"), -1}, {sp("b"), -1}}));
  EXPECT_EQ(texts(tok, tok.encode("a b", false)), (Texts{sp("a"), sp("b")}));
  // A leading space gives two markers: the added one stands alone.
  EXPECT_EQ(texts(tok, tok.encode(" a", false)), (Texts{sp(""), sp("a")}));
  EXPECT_EQ(texts(tok, tok.encode(" ", false)), (Texts{sp(""), sp("")}));
  EXPECT_TRUE(tok.encode("", false).empty());
}

TEST(SpmTokenizer, NoSpacePrefixWhenDisabled) {
  SpmVocab v = make_vocab({{sp(""), -9}, {"a", -9}, {sp("a"), -1}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("a a", false)), (Texts{"a", sp("a")}));
  EXPECT_EQ(tok.decode(tok.encode("a a", false)), "a a");
}

TEST(SpmTokenizer, UnknownCharactersFallBackToBytes) {
  SpmVocab v = make_vocab({{"a", -1}, {"\xC3\xA9", -1}});  // "é" is a token, "ü" is not
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("a\xC3\xA9\xC3\xBC", false)),
            (Texts{"a", "\xC3\xA9", "<0xC3>", "<0xBC>"}));
  // An emoji without a token: four byte tokens, which decode back to the emoji.
  const std::string rocket = "\xF0\x9F\x9A\x80";
  const std::vector<int32_t> ids = tok.encode(rocket, false);
  EXPECT_EQ(texts(tok, ids), (Texts{"<0xF0>", "<0x9F>", "<0x9A>", "<0x80>"}));
  EXPECT_EQ(tok.decode(ids), rocket);
}

TEST(SpmTokenizer, InvalidUtf8IsGroupedByLeadByteThenBytes) {
  // "\xC3" announces 2 bytes, so "\xC3" "a" is one unit that is not a token -> two bytes,
  // exactly as llama.cpp splits it; the stray continuation byte is a unit of its own.
  SpmVocab v = make_vocab({{"a", -1}});
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(texts(tok, tok.encode("\xC3" "aa\x80", false)),
            (Texts{"<0xC3>", "<0x61>", "a", "<0x80>"}));
  EXPECT_EQ(tok.decode(tok.encode("\xC3" "aa\x80", false)), "\xC3" "aa\x80");
  // A truncated lead byte at the very end.
  EXPECT_EQ(texts(tok, tok.encode("a\xE2\x96", false)), (Texts{"a", "<0xE2>", "<0x96>"}));
}

TEST(SpmTokenizer, WithoutByteTokensUnknownCharacterIsOneUnk) {
  SpmVocab v = make_vocab({{"a", -1}}, /*byte_tokens=*/false);
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.encode("a\xC3\xBC" "a", false), (std::vector<int32_t>{3, 0, 3}));
  SpmVocab no_unk = make_vocab({{"a", -1}}, false);
  no_unk.unk_id = -1;
  no_unk.types[0] = TokenType::kControl;
  no_unk.add_space_prefix = false;
  SpmTokenizer strict(std::move(no_unk));
  EXPECT_THROW(strict.encode("ab", false), Error);
}

TEST(SpmTokenizer, AddSpecialFollowsFlags) {
  SpmVocab v = make_vocab({{sp("a"), -1}});
  SpmTokenizer tok(std::move(v));
  const int32_t a = tok.find_token(sp("a"));
  EXPECT_EQ(tok.encode("a", true), (std::vector<int32_t>{1, a}));
  EXPECT_EQ(tok.encode("a", false), (std::vector<int32_t>{a}));
  EXPECT_EQ(tok.encode("", true), (std::vector<int32_t>{1}));

  SpmVocab both = make_vocab({{sp("a"), -1}});
  both.add_eos = true;
  SpmTokenizer tok2(std::move(both));
  EXPECT_EQ(tok2.encode("a", true), (std::vector<int32_t>{1, a, 2}));

  SpmVocab none = make_vocab({{sp("a"), -1}});
  none.add_bos = false;
  SpmTokenizer tok3(std::move(none));
  EXPECT_EQ(tok3.encode("a", true), (std::vector<int32_t>{a}));
}

TEST(SpmTokenizer, ControlTokensAreParsedOnlyWhenAsked) {
  SpmTokenizer tok(make_vocab({{sp("a"), -1}, {"a", -2}, {"<", -3}, {"s", -3}, {">", -3}}));
  const int32_t spa = tok.find_token(sp("a"));
  // Plain text: "<s>" is three characters (and this vocabulary has no lone U+2581 token).
  EXPECT_EQ(texts(tok, tok.encode("<s>a", false)), (Texts{"<0xE2>", "<0x96>", "<0x81>", "<", "s",
                                                          ">", "a"}));
  // Parsed: the token, then text that gets its own space prefix (it follows a special token).
  EXPECT_EQ(tok.encode("<s>a", false, true), (std::vector<int32_t>{1, spa}));
  EXPECT_EQ(tok.encode("a</s>a<s>", false, true), (std::vector<int32_t>{spa, 2, spa, 1}));
  EXPECT_EQ(tok.encode("<s>", true, true), (std::vector<int32_t>{1, 1}));
  EXPECT_EQ(tok.encode("<unk>", false, true), (std::vector<int32_t>{0}));
}

TEST(SpmTokenizer, UserDefinedTokensAreAlwaysSplitLongestFirst) {
  SpmVocab v = make_vocab({{sp("x"), -1}, {"x", -2}});
  v.tokens.push_back("<|u|>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::kUserDefined);
  v.tokens.push_back("<|u|>x");
  v.scores.push_back(0);
  v.types.push_back(TokenType::kUserDefined);
  SpmTokenizer tok(std::move(v));
  const int32_t u = tok.find_token("<|u|>");
  const int32_t ux = tok.find_token("<|u|>x");
  const int32_t spx = tok.find_token(sp("x"));
  EXPECT_EQ(tok.encode("x<|u|>x", false), (std::vector<int32_t>{spx, ux}));
  EXPECT_EQ(tok.encode("<|u|>", false), (std::vector<int32_t>{u}));
  // User-defined pieces decode as written, with or without render_special.
  EXPECT_EQ(tok.decode(std::vector<int32_t>{spx, u}), "x<|u|>");
}

TEST(SpmTokenizer, DecodeDropsOnlyTheAddedLeadingSpace) {
  SpmTokenizer tok(make_vocab({{sp(""), -9}, {"a", -9}, {sp("a"), -1}, {"b", -9}}));
  const int32_t spa = tok.find_token(sp("a"));
  const int32_t marker = tok.find_token(sp(""));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{spa, spa}), "a a");
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, spa, spa, 2}), "a a");       // BOS/EOS invisible
  EXPECT_EQ(tok.decode(std::vector<int32_t>{1, spa}, true), "<s> a");      // rendered BOS is text
  EXPECT_EQ(tok.decode(std::vector<int32_t>{marker, spa}), " a");          // " a" round trip
  EXPECT_EQ(tok.decode(std::vector<int32_t>{3 + '\n', spa}), "\n a");      // byte first: kept
  EXPECT_EQ(tok.decode(std::vector<int32_t>{}), "");
  for (const std::string s : {"a", " a", "  a a ", "ab\nb", "b b", " ", ""}) {
    EXPECT_EQ(tok.decode(tok.encode(s, true)), s) << "'" << s << "'";
  }
}

TEST(SpmTokenizer, TokenToPiece) {
  SpmTokenizer tok(make_vocab({{sp("a"), -1}}));
  EXPECT_EQ(tok.token_to_piece(tok.find_token(sp("a"))), " a");
  EXPECT_EQ(tok.token_to_piece(3 + 0xF0), "\xF0");
  EXPECT_EQ(tok.token_to_piece(1), "");
  EXPECT_EQ(tok.token_to_piece(1, true), "<s>");
  EXPECT_EQ(tok.token_to_piece(0), "");
  EXPECT_EQ(tok.token_to_piece(0, true), "<unk>");
  EXPECT_THROW(tok.token_to_piece(-1), Error);
  EXPECT_THROW(tok.token_to_piece(tok.vocab_size()), Error);
  EXPECT_THROW(tok.decode(std::vector<int32_t>{1, 99999}), Error);
}

TEST(SpmTokenizer, SpecialIdsAndEndOfGeneration) {
  SpmVocab v = make_vocab({{sp("a"), -1}});
  v.tokens.push_back("<|im_end|>");
  v.scores.push_back(0);
  v.types.push_back(TokenType::kControl);
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.vocab_size(), 3 + 256 + 2);
  EXPECT_EQ(tok.bos_id(), 1);
  EXPECT_EQ(tok.eos_id(), 2);
  EXPECT_TRUE(tok.is_eog(2));
  EXPECT_TRUE(tok.is_eog(tok.find_token("<|im_end|>")));
  EXPECT_FALSE(tok.is_eog(1));
  EXPECT_TRUE(tok.is_control(1));
  EXPECT_TRUE(tok.is_control(0));
  EXPECT_FALSE(tok.is_control(3));
  EXPECT_FALSE(tok.is_control(-1));
}

TEST(SpmTokenizer, TypesInferredWhenAbsent) {
  SpmVocab v;
  v.tokens = {"<0x41>", "a", sp("a")};
  v.add_space_prefix = false;
  SpmTokenizer tok(std::move(v));
  EXPECT_EQ(tok.token_type(0), TokenType::kByte);
  EXPECT_EQ(tok.token_type(1), TokenType::kNormal);
  EXPECT_EQ(tok.encode("Aa", false), (std::vector<int32_t>{0, 1}));
  EXPECT_EQ(tok.decode(std::vector<int32_t>{0, 2}), "A a");
}

TEST(SpmTokenizer, RejectsBadVocabularies) {
  EXPECT_THROW(SpmTokenizer(SpmVocab{}), Error);
  SpmVocab scores = make_vocab({});
  scores.scores.pop_back();
  EXPECT_THROW(SpmTokenizer(std::move(scores)), Error);
  SpmVocab bos = make_vocab({});
  bos.bos_id = 100000;
  try {
    SpmTokenizer t(std::move(bos));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("bos token id 100000"), std::string::npos) << e.what();
  }
  SpmVocab bad_byte = make_vocab({});
  bad_byte.tokens[3] = "byte";
  EXPECT_THROW(SpmTokenizer(std::move(bad_byte)), Error);
  SpmVocab bad_type = make_vocab({});
  bad_type.types[5] = static_cast<TokenType>(42);
  EXPECT_THROW(SpmTokenizer(std::move(bad_type)), Error);
}

TEST(SpmTokenizer, LongInputIsFast) {
  // 100 KB of text over a vocabulary where long merge chains are possible.
  SpmTokenizer tok(make_vocab({{sp(""), -9}, {"a", -9}, {"b", -9}, {"ab", -1}, {"abab", -2},
                               {sp("ab"), -3}, {"abababab", -4}}));
  std::string text;
  while (text.size() < 100000) text += "abababab ab\xC3\xA9 ba ";
  const auto start = std::chrono::steady_clock::now();
  const std::vector<int32_t> ids = tok.encode(text, false);
  const double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(tok.decode(ids), text);
  EXPECT_LT(ms, 2000.0);  // O(n log n): a few ms in release builds
}

}  // namespace
}  // namespace loom
