// Byte-level BPE, WordPiece and the tokenizer.json loader, piece by piece with exact ids: a
// synthetic vocabulary (merge order, added-token lstrip/rstrip), Llama 3 / Qwen3 tokenizer.json
// (digit splitting, special tokens, emoji/CJK, invalid UTF-8, streaming decode, threads),
// BERT-BGE (basic pre-tokenizer, [UNK], [CLS]/[SEP]) and the loaders' refusals.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include "core/common/error.hpp"
#include "core/tokenizer/bpe_tokenizer.hpp"
#include "core/tokenizer/byte_unicode.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/incremental_detokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"
#include "core/tokenizer/utf8.hpp"
#include "core/tokenizer/wordpiece_tokenizer.hpp"

namespace loom {
namespace {

const std::string kData = LOOM_TEST_DATA;
using Ids = std::vector<int32_t>;

BpeVocab tiny_vocab() {
  BpeVocab v;
  const std::string g = "\xC4\xA0";  // Ġ, the byte-level space
  v.tokens = {"a", "b", "c", g, "ab", "abc", g + "a", g + "ab", "<|x|>", "<u>"};
  v.merges = {{"a", "b"}, {"ab", "c"}, {g, "a"}, {g + "a", "b"}};
  v.added = {{8, "<|x|>", /*special=*/true, /*lstrip=*/true, false, false},
             {9, "<u>", /*special=*/false, false, /*rstrip=*/true, false}};
  v.pre_patterns = {kGpt2Pattern};
  v.eos_id = 8;
  return v;
}

TEST(ByteUnicode, MapsEveryByteAndBack) {
  EXPECT_EQ(byte_to_unicode(' '), "\xC4\xA0");   // Ġ
  EXPECT_EQ(byte_to_unicode('\n'), "\xC4\x8A");  // Ċ
  EXPECT_EQ(byte_to_unicode('A'), "A");
  std::string all;
  for (int b = 0; b < 256; ++b) all += static_cast<char>(b);
  std::string spelled;
  bytes_to_unicode(all, spelled);
  EXPECT_EQ(unicode_to_bytes(spelled), all);
}

TEST(BpeTokenizer, MergesByRankAndSplitsAddedTokens) {
  const BpeTokenizer tok(tiny_vocab());
  EXPECT_EQ(tok.n_merges(), 4u);
  // " ab": (a, b) has rank 0 and wins over (Ġ, a) rank 2, and (Ġ, ab) is no merge.
  EXPECT_EQ(tok.encode("abc ab", false), (Ids{5, 3, 4}));
  EXPECT_EQ(tok.encode(" a", false), (Ids{6}));
  EXPECT_EQ(tok.encode("ba", false), (Ids{1, 0}));
  // lstrip: the special token takes the spaces before it; only with parse_special.
  EXPECT_EQ(tok.encode("ab  <|x|>ab", false, true), (Ids{4, 8, 4}));
  // rstrip on a user-defined token, which is matched even without parse_special.
  EXPECT_EQ(tok.encode("ab<u>  ab", false), (Ids{4, 9, 4}));
  EXPECT_EQ(tok.decode(Ids{5, 7, 8}), "abc ab");
  EXPECT_EQ(tok.decode(Ids{5, 8}, /*render_special=*/true), "abc<|x|>");
  EXPECT_TRUE(tok.is_control(8));
  EXPECT_FALSE(tok.is_control(9));
  EXPECT_TRUE(tok.is_eog(8));
  EXPECT_THROW(tok.token_to_piece(10), Error);
}

TEST(BpeTokenizer, RefusesMergesOfUnknownTokens) {
  BpeVocab v = tiny_vocab();
  v.merges.push_back({"c", "c"});
  try {
    BpeTokenizer tok(std::move(v));
    FAIL() << "accepted a merge of unknown result";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'c c'"), std::string::npos) << e.what();
  }
}

// Gemma 4 style (llama.cpp's byte_encode = false): raw UTF-8 tokens, U+2581 for spaces, line
// breaks cut words, and a character with no token falls back to its <0xNN> tokens.
TEST(BpeTokenizer, RawUtf8VocabularyEscapesSpacesAndFallsBackToByteTokens) {
  const std::string sp = "\xE2\x96\x81";  // U+2581
  BpeVocab v;
  v.tokens = {sp, "a", "b", sp + "a", "ab", "\n", "\n\n", "<0xC3>", "<0xA9>"};
  v.types = {TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kNormal,
             TokenType::kNormal, TokenType::kNormal, TokenType::kNormal, TokenType::kByte,
             TokenType::kByte};
  v.merges = {{sp, "a"}, {"a", "b"}};
  v.pre_patterns = {"[^\\n]+|\\n+"};
  v.byte_level = false;
  BpeVocab whole = v;
  whole.whole_newline_runs = true;
  const BpeTokenizer tok(std::move(v));
  const BpeTokenizer gemma(std::move(whole));
  // " ab": (U+2581, a) ranks first, and (U+2581a, b) is no merge.
  EXPECT_EQ(tok.encode(" ab\n\n\xC3\xA9", false), (Ids{3, 2, 5, 5, 7, 8}));
  EXPECT_EQ(gemma.encode(" ab\n\n\xC3\xA9", false), (Ids{3, 2, 6, 7, 8}));
  EXPECT_EQ(gemma.decode(Ids{3, 2, 6, 7, 8}), " ab\n\n\xC3\xA9");
  EXPECT_EQ(gemma.token_to_piece(0), " ");
}

class Llama3Json : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { tok_ = load_tokenizer_json(kData + "/hf_tokenizers/llama3"); }
  static void TearDownTestSuite() { tok_.reset(); }
  static std::unique_ptr<Tokenizer> tok_;
};
std::unique_ptr<Tokenizer> Llama3Json::tok_;

// One test per loaded tokenizer where possible: each test is its own process under ctest.
TEST_F(Llama3Json, DigitsSpecialTokensInvalidUtf8AndMetadata) {
  EXPECT_EQ(tok_->encode("1234567", false), (Ids{4513, 10961, 22}));  // digits in threes
  // Invalid UTF-8 becomes U+FFFD before tokenizing, as in llama.cpp.
  EXPECT_EQ(tok_->encode("a\xFF" "b\xC3", false),
            tok_->encode("a\xEF\xBF\xBD" "b\xEF\xBF\xBD", false));
  EXPECT_EQ(tok_->bos_id(), 128000);
  EXPECT_EQ(tok_->eos_id(), 128001);
  EXPECT_TRUE(tok_->is_eog(128009));  // <|eot_id|>
  EXPECT_TRUE(tok_->is_control(128000));
  EXPECT_EQ(tok_->encode("<|begin_of_text|>Hello world", false, true), (Ids{128000, 9906, 1917}));
  const Ids plain = tok_->encode("<|begin_of_text|>Hello", false, false);
  for (const int32_t id : plain) EXPECT_LT(id, 128000);
  EXPECT_EQ(tok_->decode(plain), "<|begin_of_text|>Hello");
  EXPECT_EQ(tok_->token_to_piece(128000), "");
  EXPECT_EQ(tok_->token_to_piece(128000, true), "<|begin_of_text|>");
  // This tokenizer.json's post_processor is ByteLevel and the config has no add_bos_token.
  EXPECT_EQ(tok_->encode("Hello", true), (Ids{9906}));
}

TEST_F(Llama3Json, EmojiCjkRoundTripAndStreamingNeverSplitsACharacter) {
  const std::string text =
      "\xF0\x9F\xA6\x99 \xE6\x88\x91\xE7\x88\xB1\xE4\xBD\xA0 h\xC3\xA9llo  \n\t!";
  const Ids ids = tok_->encode(text, false);
  EXPECT_EQ(tok_->decode(ids), text);
  IncrementalDetokenizer detok(*tok_, {});
  std::string streamed;
  for (const int32_t id : ids) {
    const std::string delta = detok.push(id);
    EXPECT_TRUE(utf8_is_valid(delta)) << "token " << id;
    streamed += delta;
  }
  streamed += detok.flush();
  EXPECT_EQ(streamed, text);
}

TEST_F(Llama3Json, ConcurrentEncodesAgree) {
  std::vector<std::string> texts;
  for (int i = 0; i < 8; ++i) {
    texts.push_back("Thread " + std::to_string(i) + " says: the quick brown fox, 12345 times! " +
                    std::string(static_cast<size_t>(i) * 7, ' ') + "\xE4\xBD\xA0\xE5\xA5\xBD");
  }
  std::vector<Ids> expected;
  for (const auto& t : texts) expected.push_back(tok_->encode(t, false));
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int th = 0; th < 4; ++th) {
    threads.emplace_back([&, th] {
      for (int round = 0; round < 50; ++round) {
        for (size_t k = 0; k < texts.size(); ++k) {
          if (tok_->encode(texts[k], false) != expected[k]) ++mismatches[th];
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(Qwen3Json, SingleDigitsAndNfc) {
  const auto tok = load_tokenizer_json(kData + "/hf_tokenizers/qwen3/tokenizer.json");
  EXPECT_EQ(tok->encode("1234", false), (Ids{16, 17, 18, 19}));
  EXPECT_EQ(tok->encode("Hello world", false), (Ids{9707, 1879}));
  // NFC: e + combining acute is the same text as the precomposed character.
  EXPECT_EQ(tok->encode("cafe\xCC\x81", false), tok->encode("caf\xC3\xA9", false));
  EXPECT_EQ(tok->bos_id(), -1);
  EXPECT_EQ(tok->eos_id(), 151645);  // <|im_end|>
  EXPECT_TRUE(tok->is_eog(151645));
  EXPECT_EQ(tok->encode("<|im_start|>user", false, true).front(), 151644);
}

TEST(GgufBpe, StarcoderSplitsEveryDigit) {
  const GgufFile file = GgufFile::open(kData + "/vocab/ggml-vocab-starcoder.gguf");
  const auto tok = load_tokenizer(file);
  EXPECT_EQ(tok->encode("x=2024;", true), (Ids{125, 66, 55, 53, 55, 57, 64}));  // no BOS asked
}

TEST(GgufBpe, DeepseekCoderSplitsCjkAndAddsBos) {
  const GgufFile file = GgufFile::open(kData + "/vocab/ggml-vocab-deepseek-coder.gguf");
  const auto tok = load_tokenizer(file);
  EXPECT_EQ(tok->encode("int x = 42; // \xE4\xBD\xA0\xE5\xA5\xBD", true),
            (Ids{32013, 569, 1371, 1412, 19, 17, 26, 1069, 207, 1367, 1248}));
  EXPECT_EQ(tok->bos_id(), 32013);
  EXPECT_EQ(tok->eos_id(), 32014);
}

TEST(GgufBpe, Gpt2MetadataAndSpecialText) {
  const GgufFile file = GgufFile::open(kData + "/vocab/ggml-vocab-gpt-2.gguf");
  const auto tok = load_tokenizer(file);
  const auto& bpe = dynamic_cast<const BpeTokenizer&>(*tok);
  EXPECT_EQ(tok->vocab_size(), 50257);
  EXPECT_EQ(bpe.n_merges(), 50000u);
  EXPECT_FALSE(bpe.add_bos());
  EXPECT_FALSE(bpe.ignore_merges());
  EXPECT_EQ(tok->eos_id(), 50256);
  EXPECT_TRUE(tok->is_eog(50256));
  EXPECT_EQ(tok->encode("Hello<|endoftext|>", true, true), (Ids{15496, 50256}));
  EXPECT_EQ(tok->encode("Hello world", true), (Ids{15496, 995}));
}

TEST(WordPiece, BertBgeBasicPreTokenizerAndSpecials) {
  const GgufFile file = GgufFile::open(kData + "/vocab/ggml-vocab-bert-bge.gguf");
  const auto tok = load_tokenizer(file);
  const auto& wp = dynamic_cast<const WordPieceTokenizer&>(*tok);
  EXPECT_EQ(wp.pre_tokenize("H\xC3\xA9llo, WORLD!\xE4\xBD\xA0\xE5\xA5\xBD"),
            (std::vector<std::string>{"hello", ",", "world", "!", "\xE4\xBD\xA0",
                                      "\xE5\xA5\xBD"}));
  const Ids ids = tok->encode("hello world", true);
  ASSERT_EQ(ids.size(), 4u);
  EXPECT_EQ(ids.front(), 101);  // [CLS]
  EXPECT_EQ(ids.back(), 102);   // [SEP]
  EXPECT_EQ(tok->decode(ids), "hello world");
  EXPECT_EQ(tok->encode("\xF0\x9F\xA6\x99", false), (Ids{100}));  // [UNK]
  EXPECT_EQ(tok->encode("[CLS]", false, true), (Ids{101}));
}

TEST(TokenizerLoaders, RefuseWhatIsNotSupported) {
  try {
    pre_tokenizer_for_gguf("no-such-pre");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'no-such-pre'"), std::string::npos);
    EXPECT_EQ(e.code(), LOOM_ERR_UNSUPPORTED);
  }
  const auto dir = std::filesystem::temp_directory_path() / "loom_tok_unigram";
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer.json") << R"({"model": {"type": "Unigram", "vocab": []}})";
  try {
    load_tokenizer_json(dir.string());
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("'Unigram'"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
  EXPECT_THROW(load_tokenizer_json((dir / "missing").string()), Error);
}

}  // namespace
}  // namespace loom
