// Tokenizers loaded from real GGUF files, checked against oracles nobody here wrote:
// llama.cpp's tokenizer vectors for the Llama 2 vocabulary (tests/data/vocab) and llama2.c's
// greedy stories260K output. Also load_tokenizer()'s errors on synthetic files.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"
#include "core/tokenizer/incremental_detokenizer.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"

#include "tests/unit/vocab_cases.hpp"

namespace loom {
namespace {

const std::string kData = LOOM_TEST_DATA;
const std::string kLlamaSpm = kData + "/vocab/ggml-vocab-llama-spm.gguf";
const std::string kStories = kData + "/stories260K.llamacpp.gguf";

using test::read_file;
using test::read_vocab_cases;
using test::VocabCase;

TEST(TokenizerGguf, LlamaSpmMatchesLlamaCppVectors) {
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  const std::vector<VocabCase> cases = read_vocab_cases(kLlamaSpm);
  ASSERT_EQ(cases.size(), 46u);  // the upstream file's count (its last separator ends the file)
  for (size_t i = 0; i < cases.size(); ++i) {
    EXPECT_EQ(tok->encode(cases[i].text, /*add_special=*/false), cases[i].ids)
        << "case " << i << ": '" << cases[i].text << "'";
  }
}

TEST(TokenizerGguf, LlamaSpmDecodeRoundTripsEveryVector) {
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  for (const VocabCase& c : read_vocab_cases(kLlamaSpm)) {
    EXPECT_EQ(tok->decode(c.ids), c.text);
    EXPECT_EQ(tok->decode(tok->encode(c.text, true)), c.text);  // BOS does not change it
  }
}

TEST(TokenizerGguf, LlamaSpmRoundTripsMixedText) {
  // Byte fallback makes every byte string encodable, and the leading-space rule makes decode
  // give it back exactly, stray continuation bytes included.
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  const std::vector<std::string> alphabet{" ", "  ", "a", "Hello", "\n", "\t", "\xC3\xA9",
                                          "\xF0\x9F\xA6\x99", "\x80", "<s>", "7", "\xE6\x88\x91"};
  std::mt19937 rng(1234);
  for (int round = 0; round < 300; ++round) {
    std::string s;
    const int parts = static_cast<int>(rng() % 12);
    for (int k = 0; k < parts; ++k) s += alphabet[rng() % alphabet.size()];
    EXPECT_EQ(tok->decode(tok->encode(s, true)), s);
  }
  // A lead byte without its continuation takes the next bytes into its unit (as llama.cpp
  // does), which round-trips through byte tokens...
  EXPECT_EQ(tok->decode(tok->encode("a\xC3" "bc\xFF" "defg\xE2", true)), "a\xC3" "bc\xFF" "defg\xE2");
}

// The two inputs SentencePiece-BPE cannot give back (llama.cpp behaves the same way).
TEST(TokenizerGguf, LlamaSpmRoundTripExceptions) {
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  // A literal U+2581 in the text is the space marker, so it decodes as ' '.
  EXPECT_EQ(tok->decode(tok->encode("a\xE2\x96\x81" "b", false)), "a b");
  // A stray lead byte right before a space swallows part of the marker into its unit; the
  // marker's bytes then fall back to byte tokens and decode as raw U+2581, not as ' '.
  const std::vector<int32_t> ids = tok->encode("a\xC3 b", false);
  EXPECT_EQ(ids, (std::vector<int32_t>{263, 198, 229, 153, 132, 29890}));
  EXPECT_EQ(tok->decode(ids), "a\xC3\xE2\x96\x81" "b");
}

TEST(TokenizerGguf, LlamaSpmMetadata) {
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  const auto& spm = dynamic_cast<const SpmTokenizer&>(*tok);
  EXPECT_EQ(tok->vocab_size(), 32000);
  EXPECT_EQ(tok->bos_id(), 1);
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(spm.unk_id(), 0);
  EXPECT_EQ(spm.pad_id(), -1);
  EXPECT_TRUE(spm.add_bos());
  EXPECT_FALSE(spm.add_eos());
  EXPECT_TRUE(spm.add_space_prefix());
  EXPECT_TRUE(tok->is_eog(2));
  EXPECT_FALSE(tok->is_eog(1));
  EXPECT_TRUE(tok->is_control(1));
  EXPECT_EQ(spm.token_type(13), TokenType::kByte);  // <0x0A>
  EXPECT_EQ(tok->token_to_piece(13), "\n");
  EXPECT_EQ(tok->token_to_piece(15043), " Hello");
  EXPECT_EQ(tok->encode("Hello world", true), (std::vector<int32_t>{1, 15043, 3186}));
  EXPECT_EQ(tok->decode(std::vector<int32_t>{1, 15043, 3186, 2}), "Hello world");
}

TEST(TokenizerGguf, LlamaSpmSpecialTokensInText) {
  const GgufFile file = GgufFile::open(kLlamaSpm);
  const auto tok = load_tokenizer(file);
  // Parsed: <s> is BOS and the text after it gets the space prefix again.
  EXPECT_EQ(tok->encode("<s>Hello</s>", false, true), (std::vector<int32_t>{1, 15043, 2}));
  // Not parsed: plain characters, never the control ids.
  const std::vector<int32_t> plain = tok->encode("<s>Hello</s>", false, false);
  for (const int32_t id : plain) EXPECT_FALSE(tok->is_control(id)) << id;
  EXPECT_EQ(tok->decode(plain), "<s>Hello</s>");
}

TEST(TokenizerGguf, Stories260KEncodesAndDecodes) {
  const GgufFile file = GgufFile::open(kStories);
  const auto tok = load_tokenizer(file);
  EXPECT_EQ(tok->vocab_size(), 512);
  // Ids from an independent brute-force SentencePiece-BPE over the same vocabulary:
  // ▁Once ▁upon ▁a ▁time.
  const std::vector<int32_t> ids = tok->encode("Once upon a time", true);
  EXPECT_EQ(ids, (std::vector<int32_t>{1, 403, 407, 261, 378}));
  EXPECT_EQ(tok->decode(ids), "Once upon a time");
  EXPECT_EQ(tok->encode("Tim and Lily are friends.", false),
            (std::vector<int32_t>{326, 269, 317, 261, 276, 374, 419, 426}));
  // "é" is a token, the emoji falls back to bytes.
  EXPECT_EQ(tok->encode("caf\xC3\xA9 \xF0\x9F\x98\x80", false),
            (std::vector<int32_t>{280, 412, 431, 485, 410, 243, 162, 155, 131}));
}

TEST(TokenizerGguf, Stories260KGreedyStoryDecodesLikeLlama2c) {
  const GgufFile file = GgufFile::open(kStories);
  const auto tok = load_tokenizer(file);
  std::vector<int32_t> ids{1};
  std::istringstream in(read_file(kData + "/greedy_from_bos_256.ids"));
  for (int32_t id; in >> id;) ids.push_back(id);
  ASSERT_EQ(ids.size(), 257u);
  // llama2.c's run.c printed this story (doc/stories260K.md), 565 bytes without its final "\n".
  const std::string text = tok->decode(ids);
  EXPECT_EQ(text.size(), 565u);
  EXPECT_EQ(text.substr(0, 126),
            "Once upon a time, there was a little girl named Lily. She loved to play outside in "
            "the park. One day, she saw a big, red ball.");
  EXPECT_TRUE(text.ends_with("Her mom said, \"Don't worry, Lily. We can help you."));

  // Streaming the same ids after the BOS prompt gives the same text, token by token.
  IncrementalDetokenizer detok(*tok, std::span<const int32_t>(ids.data(), 1));
  std::string streamed;
  for (size_t i = 1; i < ids.size(); ++i) streamed += detok.push(ids[i]);
  streamed += detok.flush();
  EXPECT_EQ(streamed, text);

  // After the prompt "Once upon" the next word keeps its space.
  const std::vector<int32_t> prompt = tok->encode("Once upon", true);
  IncrementalDetokenizer after(*tok, prompt);
  EXPECT_EQ(after.push(261), " a");
}

TEST(TokenizerGguf, LoomConvertedStoriesGivesTheSameTokenizer) {
  const std::string path = kData + "/stories260K.gguf";
  if (!std::filesystem::exists(path)) GTEST_SKIP() << path << " not present";
  const GgufFile ours = GgufFile::open(path);
  const GgufFile ref = GgufFile::open(kStories);
  const auto a = load_tokenizer(ours);
  const auto b = load_tokenizer(ref);
  ASSERT_EQ(a->vocab_size(), b->vocab_size());
  for (const char* s : {"Once upon a time, Lily saw a big dog.\nThe end.", " x  y\t\xE2\x9C\x85", ""}) {
    EXPECT_EQ(a->encode(s, true), b->encode(s, true)) << s;
  }
  for (int32_t id = 0; id < a->vocab_size(); ++id) {
    ASSERT_EQ(a->token_to_piece(id, true), b->token_to_piece(id, true)) << id;
  }
}

// ---- load_tokenizer() on synthetic files ---------------------------------------------------

GgufWriter tiny_vocab_writer() {
  GgufWriter w;
  w.set_string("general.architecture", "llama");
  w.set_string("tokenizer.ggml.model", "llama");
  w.set("tokenizer.ggml.tokens",
        GgufValue::of_strings({"<unk>", "<s>", "</s>", "\xE2\x96\x81" "a", "a", "<0x62>"}));
  w.set("tokenizer.ggml.scores", GgufValue::of_f32s({0, 0, 0, -1, -2, 0}));
  w.set("tokenizer.ggml.token_type", GgufValue::of_i32s({2, 3, 3, 1, 1, 6}));
  return w;
}

std::unique_ptr<Tokenizer> load_from(const GgufWriter& w) {
  const GgufFile file = GgufFile::from_bytes(w.to_bytes(), "synthetic.gguf");
  return load_tokenizer(file);
}

std::string load_error(const GgufWriter& w) {
  try {
    load_from(w);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(TokenizerGguf, SyntheticFileDefaultsAndFlags) {
  GgufWriter w = tiny_vocab_writer();
  const auto tok = load_from(w);
  EXPECT_EQ(tok->bos_id(), 1);  // llama.cpp's SPM defaults when the ids are absent
  EXPECT_EQ(tok->eos_id(), 2);
  EXPECT_EQ(tok->encode("aab", true), (std::vector<int32_t>{1, 3, 4, 5}));

  w.set_bool("tokenizer.ggml.add_space_prefix", false);
  w.set_bool("tokenizer.ggml.add_bos_token", false);
  w.set_bool("tokenizer.ggml.add_eos_token", true);
  w.set_u32("tokenizer.ggml.padding_token_id", 0xFFFFFFFFu);  // "none"
  w.set_u32("tokenizer.ggml.eot_token_id", 4);
  const auto tok2 = load_from(w);
  EXPECT_EQ(tok2->encode("aab", true), (std::vector<int32_t>{4, 4, 5, 2}));
  EXPECT_EQ(dynamic_cast<const SpmTokenizer&>(*tok2).pad_id(), -1);
  EXPECT_TRUE(tok2->is_eog(4));
}

TEST(TokenizerGguf, UnsupportedModelTypeIsNamed) {
  GgufWriter w = tiny_vocab_writer();
  w.set_string("tokenizer.ggml.model", "rwkv");
  const std::string err = load_error(w);
  EXPECT_NE(err.find("synthetic.gguf"), std::string::npos) << err;
  EXPECT_NE(err.find("'rwkv'"), std::string::npos) << err;
  EXPECT_NE(err.find("supported: llama"), std::string::npos) << err;
}

TEST(TokenizerGguf, Gpt2WithoutMergesIsNamed) {
  GgufWriter w = tiny_vocab_writer();
  w.set_string("tokenizer.ggml.model", "gpt2");
  const std::string err = load_error(w);
  EXPECT_NE(err.find("tokenizer.ggml.merges"), std::string::npos) << err;
}

TEST(TokenizerGguf, MalformedMetadataIsNamed) {
  GgufWriter no_model;
  no_model.set_string("general.architecture", "llama");
  EXPECT_NE(load_error(no_model).find("tokenizer.ggml.model"), std::string::npos);

  GgufWriter fresh;
  fresh.set_string("tokenizer.ggml.model", "llama");
  EXPECT_NE(load_error(fresh).find("tokenizer.ggml.tokens"), std::string::npos);

  GgufWriter wrong_type = tiny_vocab_writer();
  wrong_type.set("tokenizer.ggml.tokens", GgufValue::of_i32s({1, 2}));
  const std::string err = load_error(wrong_type);
  EXPECT_NE(err.find("tokenizer.ggml.tokens"), std::string::npos) << err;
  EXPECT_NE(err.find("int32"), std::string::npos) << err;

  GgufWriter short_scores = tiny_vocab_writer();
  short_scores.set("tokenizer.ggml.scores", GgufValue::of_f32s({0, 0}));
  EXPECT_NE(load_error(short_scores).find("2 entries for 6 tokens"), std::string::npos);

  GgufWriter bad_bos = tiny_vocab_writer();
  bad_bos.set_u32("tokenizer.ggml.bos_token_id", 6);
  EXPECT_NE(load_error(bad_bos).find("tokenizer.ggml.bos_token_id' = 6"), std::string::npos)
      << load_error(bad_bos);

  GgufWriter bad_kind = tiny_vocab_writer();
  bad_kind.set("tokenizer.ggml.token_type", GgufValue::of_i32s({2, 3, 3, 1, 9, 6}));
  EXPECT_NE(load_error(bad_kind).find("token_type'[4] = 9"), std::string::npos)
      << load_error(bad_kind);

  GgufWriter bad_byte = tiny_vocab_writer();
  bad_byte.set("tokenizer.ggml.token_type", GgufValue::of_i32s({2, 3, 3, 1, 6, 6}));
  const std::string byte_err = load_error(bad_byte);
  EXPECT_NE(byte_err.find("synthetic.gguf"), std::string::npos) << byte_err;
  EXPECT_NE(byte_err.find("expected <0xNN>"), std::string::npos) << byte_err;
}

}  // namespace
}  // namespace loom
