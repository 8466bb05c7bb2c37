// Every `tokenizer.ggml.pre` name llama.cpp knows, split the way llama.cpp splits it.
//
// tests/data/pre_tokenizers/llama_cpp_splits.json holds, for each name in llama.cpp's
// src/llama-vocab.cpp (llama-cpp-python 0.3.36's vendor/llama.cpp), its flags and the exact
// words of five texts (contractions in both cases, digit runs up to 13 long and non-ASCII
// numbers, CJK, Hangul, emoji, Devanagari marks, runs of spaces/tabs/newlines/NBSP/U+3000,
// punctuation and symbols, camel case). It was made by tools/tokenizer/pre_tokenizer_splits.py,
// which reads the names and expressions out of llama.cpp's source and splits with a Python
// model of llama.cpp's unicode_regex_split() (std::regex on the "collapsed" text, its
// hand-coded Kimi K2 and digit-group splitters) — not with Loom's expressions or PCRE2.
// llama_cpp_gpt2_ids.json has llama.cpp itself tokenize 51 texts under every byte-level name
// (EveryByteLevelNameGivesLlamaCppsIds). Real vocab files with llama.cpp's .inp/.out vectors are
// checked in test_tokenizer_vocab.cpp.
#include <gtest/gtest.h>

#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/gguf_writer.hpp"
#include "core/tokenizer/pre_tokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

const std::string kData = LOOM_TEST_DATA;
using Words = std::vector<std::string>;

Words split(const PreTokenizer& pre, const std::string& text) {
  std::vector<std::string_view> views;
  pre.split(text, views);
  return Words(views.begin(), views.end());
}

Words split_with(const std::vector<std::string>& steps, const std::string& text) {
  return split(PreTokenizer(steps), text);
}

nlohmann::json expected() {
  std::ifstream in(kData + "/pre_tokenizers/llama_cpp_splits.json");
  return nlohmann::json::parse(in);
}

TEST(PreTokenizers, EveryLlamaCppNameSplitsAsLlamaCpp) {
  const nlohmann::json j = expected();
  const auto texts = j.at("texts").get<std::vector<std::string>>();
  ASSERT_EQ(texts.size(), 5u);
  size_t names = 0;
  size_t passed = 0;
  for (const auto& [name, e] : j.at("names").items()) {
    ++names;
    if (name == "whitespace") {
      // jina-embeddings-v2-base-zh's own tokenizer session in llama.cpp: refused.
      try {
        pre_tokenizer_for_gguf(name);
        ADD_FAILURE() << name << " is not run by Loom and must be refused";
      } catch (const Error& err) {
        EXPECT_EQ(err.code(), LOOM_ERR_UNSUPPORTED);
        ++passed;
      }
      continue;
    }
    const PreTokenizerSpec spec = pre_tokenizer_for_gguf(name);
    EXPECT_EQ(spec.ignore_merges, e.at("ignore_merges").get<bool>()) << name;
    EXPECT_EQ(spec.add_bos, e.at("add_bos").get<bool>()) << name;
    const PreTokenizer pre(spec.patterns);
    EXPECT_EQ(spec.byte_level, e.at("byte_level").get<bool>()) << name;
    bool all = spec.ignore_merges == e.at("ignore_merges").get<bool>() &&
               spec.add_bos == e.at("add_bos").get<bool>() &&
               spec.byte_level == e.at("byte_level").get<bool>();
    for (size_t t = 0; t < texts.size(); ++t) {
      const Words want = e.at("splits").at(t).get<Words>();
      const Words got = split(pre, texts[t]);
      EXPECT_EQ(got, want) << name << " (" << e.at("family").get<std::string>() << "), text " << t;
      all = all && got == want;
    }
    if (all) ++passed;
  }
  std::cout << "pre-tokenizers: " << passed << "/" << names << " llama.cpp names\n";
  EXPECT_EQ(names, 91u);  // llama.cpp 0.3.36's list, "default" included
  EXPECT_EQ(passed, names);
}

// llama.cpp itself in the loop: tests/data/pre_tokenizers/llama_cpp_gpt2_ids.json holds the ids
// llama.cpp (0.3.36, tools/tokenizer/llama_cpp_ids.cpp) gave for the five texts above and the 46
// .inp texts, on ggml-vocab-gpt-2.gguf with tokenizer.ggml.pre set to each byte-level name
// (tools/tokenizer/llama_cpp_pre_ids.py). Loom reads the same file with the same override.
GgufFile gpt2_vocab_with_pre(const GgufFile& gpt2, const std::string& pre) {
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.token_type",
                          "tokenizer.ggml.merges", "tokenizer.ggml.bos_token_id",
                          "tokenizer.ggml.eos_token_id"}) {
    if (const GgufValue* v = gpt2.find(key)) w.set(key, *v);
  }
  return GgufFile::from_bytes(w.to_bytes(), pre + ".gguf");
}

TEST(PreTokenizers, EveryByteLevelNameGivesLlamaCppsIds) {
  std::ifstream in(kData + "/pre_tokenizers/llama_cpp_gpt2_ids.json");
  const nlohmann::json j = nlohmann::json::parse(in);
  const auto texts = j.at("texts").get<std::vector<std::string>>();
  ASSERT_EQ(texts.size(), 51u);
  const GgufFile gpt2 = GgufFile::open(kData + "/vocab/ggml-vocab-gpt-2.gguf");
  size_t names = 0;
  size_t passed = 0;
  for (const auto& [name, ids] : j.at("ids").items()) {
    ++names;
    const auto tok = load_tokenizer(gpt2_vocab_with_pre(gpt2, name));
    size_t ok = 0;
    for (size_t t = 0; t < texts.size(); ++t) {
      const auto want = ids.at(t).get<std::vector<int32_t>>();
      const auto got = tok->encode(texts[t], /*add_special=*/false);
      EXPECT_EQ(got, want) << name << ", text " << t << ": '" << texts[t] << "'";
      if (got == want) ++ok;
    }
    if (ok == texts.size()) ++passed;
  }
  std::cout << "llama.cpp ids: " << passed << "/" << names << " names\n";
  EXPECT_EQ(names, 87u);  // all but gemma4, granite-embed-multi-311m, sarvam-moe, whitespace
  EXPECT_EQ(passed, names);
}

TEST(PreTokenizers, KnownNamesAreLlamaCppsLessWhitespace) {
  const nlohmann::json j = expected();
  std::set<std::string> llama_cpp;
  for (const auto& [name, e] : j.at("names").items()) {
    if (name != "whitespace") llama_cpp.insert(name);
  }
  const std::vector<std::string> known = known_gguf_pre_tokenizers();
  EXPECT_EQ(std::set<std::string>(known.begin(), known.end()), llama_cpp);
  EXPECT_EQ(known.size(), llama_cpp.size()) << "a name listed twice";
}

TEST(PreTokenizers, UnknownNameIsRefusedWithTheKnownOnesOnOneLine) {
  try {
    pre_tokenizer_for_gguf("no-such");
    FAIL();
  } catch (const Error& e) {
    const std::string what = e.what();
    EXPECT_EQ(e.code(), LOOM_ERR_UNSUPPORTED);
    EXPECT_EQ(what.find('\n'), std::string::npos);
    EXPECT_NE(what.find("'no-such'"), std::string::npos) << what;
    for (const char* name : {"gpt-2", "falcon", "deepseek-llm", "mpt", "tekken", "kimi-k2",
                             "superbpe", "grok-2", "laguna", "chatglm-bpe", "smollm", "gemma4",
                             "sarvam-moe"}) {
      const std::string listed = std::string(" ") + name;
      EXPECT_TRUE(what.find(listed + ",") != std::string::npos ||
                  what.find(listed + ")") != std::string::npos)
          << name;
    }
  }
}

// Cases worked out by hand from the expressions' definitions.

TEST(PreTokenizers, EmptyMatchesCutTheText) {
  // A lookahead alone matches empty strings: each one is a cut, nothing is dropped.
  EXPECT_EQ(split_with({"(?=b)"}, "abab"), (Words{"a", "ba", "b"}));
  // SuperBPE: digit runs, then groups of three ASCII digits from the right.
  const PreTokenizer superbpe(pre_tokenizer_for_gguf("superbpe").patterns);
  EXPECT_EQ(split(superbpe, "x1234567y"), (Words{"x", "1", "234", "567", "y"}));
  EXPECT_EQ(split(superbpe, "123456"), (Words{"123", "456"}));
  // Arabic-Indic digits are \p{N} but not ASCII: one run, never cut.
  const std::string arabic = "\xD9\xA1\xD9\xA2\xD9\xA3\xD9\xA4";
  EXPECT_EQ(split(superbpe, arabic), (Words{arabic}));
}

TEST(PreTokenizers, DigitGroupsCarryTheTextBeforeThem) {
  const DigitGroupSplitter digits;
  std::vector<std::string_view> out;
  digits.split("ab  1234 5 678x", out);
  EXPECT_EQ(Words(out.begin(), out.end()), (Words{"ab  1", "234", " 5", " 678", "x"}));
  // ... which is why Tiny Aya keeps "  " and "1" apart where a plain split would give "  ".
  const PreTokenizer tiny_aya(pre_tokenizer_for_gguf("tiny_aya").patterns);
  EXPECT_EQ(split(tiny_aya, "ab  1234"), (Words{"ab", " ", " ", "1", "234"}));
  EXPECT_EQ(split(tiny_aya, "\xEF\xBC\x91\xEF\xBC\x92\xEF\xBC\x93\xEF\xBC\x94"),  // １２３４
            (Words{"\xEF\xBC\x91", "\xEF\xBC\x92\xEF\xBC\x93\xEF\xBC\x94"}));
}

TEST(PreTokenizers, CaseRunsOnlyInAscii) {
  // Tekken / GPT-4o: an upper-case run may start a word, lower-case letters end it.
  const PreTokenizer gpt4o(pre_tokenizer_for_gguf("gpt-4o").patterns);
  EXPECT_EQ(split(gpt4o, "getHTTPResponse HelloWorld"),
            (Words{"get", "HTTPResponse", " Hello", "World"}));
  // Kimi K2 (hand-coded in llama.cpp) takes one letter run, Han apart.
  const PreTokenizer kimi(pre_tokenizer_for_gguf("kimi-k2").patterns);
  EXPECT_EQ(split(kimi, "HelloWorld\xE4\xBD\xA0\xE5\xA5\xBD" "abc's"),  // HelloWorld你好abc's
            (Words{"HelloWorld", "\xE4\xBD\xA0\xE5\xA5\xBD", "abc's"}));
}

TEST(PreTokenizers, DeepseekLlmSpaceRuns) {
  // A space run keeps one space for the Latin word after it; one at the end stays whole.
  const PreTokenizer ds(pre_tokenizer_for_gguf("deepseek-llm").patterns);
  EXPECT_EQ(split(ds, "ab  c"), (Words{"ab", " ", " c"}));
  EXPECT_EQ(split(ds, "ab  "), (Words{"ab", "  "}));
  EXPECT_EQ(split(ds, "ab\r\n"), (Words{"ab", "\r", "\n"}));
}

GgufFile byte_vocab(const std::string& pre, bool with_merges) {
  // Token b is byte b, spelled as GPT-2 spells bytes; token 256 is "ab".
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) {
    std::string s;
    // GPT-2's printable range maps to itself; others are spelled U+0100 + n (UTF-8).
    if ((b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE) {
      const auto cp = static_cast<uint32_t>(b);
      s = cp < 0x80 ? std::string(1, static_cast<char>(cp))
                    : std::string{static_cast<char>(0xC0 | (cp >> 6)),
                                  static_cast<char>(0x80 | (cp & 0x3F))};
    }
    tokens.push_back(s);
  }
  // Fill the other bytes' spellings (U+0100.. in byte order), as GPT-2 assigns them.
  uint32_t next = 0x100;
  for (int b = 0; b < 256; ++b) {
    if (!tokens[b].empty()) continue;
    const uint32_t cp = next++;
    tokens[b] = {static_cast<char>(0xC0 | (cp >> 6)), static_cast<char>(0x80 | (cp & 0x3F))};
  }
  tokens.push_back("ab");
  GgufWriter w;
  w.set_string("tokenizer.ggml.model", "gpt2");
  w.set_string("tokenizer.ggml.pre", pre);
  w.set("tokenizer.ggml.tokens", GgufValue::of_strings(tokens));
  if (with_merges) w.set("tokenizer.ggml.merges", GgufValue::of_strings({"a b"}));
  return GgufFile::from_bytes(w.to_bytes(), pre + ".gguf");
}

TEST(PreTokenizers, OnlyKimiK2MayGoWithoutMerges) {
  const auto kimi = load_tokenizer(byte_vocab("kimi-k2", false));
  EXPECT_EQ(kimi->encode("ab", false), (std::vector<int32_t>{'a', 'b'}));
  const auto gpt2 = load_tokenizer(byte_vocab("gpt-2", true));
  EXPECT_EQ(gpt2->encode("ab", false), (std::vector<int32_t>{256}));
  try {
    load_tokenizer(byte_vocab("gpt-2", false));
    FAIL() << "a gpt-2 vocabulary without merges loaded";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tokenizer.ggml.merges"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
