// GGUF tokenizer metadata helpers, and the BPE ("gpt2", "gemma4") and WordPiece ("bert")
// loaders. Defaults follow llama.cpp where a key is absent.
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/tokenizer/bpe_tokenizer.hpp"
#include "core/tokenizer/gguf_tokenizer_keys.hpp"
#include "core/tokenizer/wordpiece_tokenizer.hpp"

namespace loom {

const GgufArray& gguf_array_of(const GgufFile& file, const GgufValue& v, const std::string& key,
                               std::initializer_list<GgufValueType> elem_types,
                               const char* expected) {
  if (v.type == GgufValueType::kArray) {
    const GgufArray& a = v.as_array();
    for (const GgufValueType t : elem_types) {
      if (a.type == t) return a;
    }
    throw Error(file.path() + ": metadata '" + key + "' must be an array of " + expected +
                ", got an array of " + gguf_type_name(a.type));
  }
  throw Error(file.path() + ": metadata '" + key + "' must be an array of " + expected + ", got " +
              gguf_type_name(v.type));
}

int32_t gguf_special_id(const GgufFile& file, const std::string& key, int32_t fallback,
                        size_t n_vocab) {
  const int64_t id = file.get_int(key, fallback);
  if (id == -1 || id == 0xFFFFFFFFLL) return -1;
  if (id < 0 || static_cast<uint64_t>(id) >= n_vocab) {
    throw Error(file.path() + ": metadata '" + key + "' = " + std::to_string(id) +
                " is outside the vocabulary of " + std::to_string(n_vocab) + " tokens");
  }
  return static_cast<int32_t>(id);
}

std::vector<std::string> gguf_tokens(const GgufFile& file) {
  const std::string key = "tokenizer.ggml.tokens";
  const GgufArray& tokens =
      gguf_array_of(file, file.get(key), key, {GgufValueType::kString}, "strings");
  if (tokens.items.empty()) throw Error(file.path() + ": metadata '" + key + "' is empty");
  std::vector<std::string> out;
  out.reserve(tokens.items.size());
  for (const GgufValue& t : tokens.items) out.push_back(t.as_string());
  return out;
}

std::vector<TokenType> gguf_token_types(const GgufFile& file, size_t n) {
  const std::string key = "tokenizer.ggml.token_type";
  std::vector<TokenType> out;
  const GgufValue* v = file.find(key);
  if (v == nullptr) return out;
  const GgufArray& types =
      gguf_array_of(file, *v, key,
                    {GgufValueType::kInt32, GgufValueType::kUint32, GgufValueType::kInt8,
                     GgufValueType::kUint8, GgufValueType::kInt16, GgufValueType::kUint16,
                     GgufValueType::kInt64, GgufValueType::kUint64},
                    "integers");
  if (types.items.size() != n) {
    throw Error(file.path() + ": metadata '" + key + "' has " + std::to_string(types.items.size()) +
                " entries for " + std::to_string(n) + " tokens");
  }
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const int64_t t = types.items[i].as_int();
    if (t < 0 || t > static_cast<int64_t>(TokenType::kByte)) {
      throw Error(file.path() + ": metadata '" + key + "'[" + std::to_string(i) +
                  "] = " + std::to_string(t) + " is not a token type (0..6)");
    }
    out.push_back(static_cast<TokenType>(t));
  }
  return out;
}

std::unique_ptr<Tokenizer> load_gguf_bpe(const GgufFile& file) {
  BpeVocab vocab;
  vocab.tokens = gguf_tokens(file);
  const size_t n = vocab.tokens.size();
  vocab.types = gguf_token_types(file, n);
  if (vocab.types.empty()) vocab.types.assign(n, TokenType::kNormal);

  // tokenizer.ggml.model "gemma4" is always Gemma 4's pre-tokenizer, whatever the key says.
  const bool gemma4 = file.get_string("tokenizer.ggml.model", "") == "gemma4";
  const std::string pre = gemma4 ? "gemma4" : file.get_string("tokenizer.ggml.pre", "default");
  PreTokenizerSpec spec;
  try {
    spec = pre_tokenizer_for_gguf(pre);
  } catch (const Error& e) {
    throw Error(file.path() + ": " + e.what(), e.code());
  }
  const std::string merges_key = "tokenizer.ggml.merges";
  // llama.cpp lets Kimi K2's conversion go without merges (its words are then spelled by bytes
  // unless whole); every other family needs them.
  const GgufValue* merges_value = file.find(merges_key);
  if (merges_value == nullptr && !spec.merges_optional) (void)file.get(merges_key);  // throws
  static const GgufArray kNoMerges{GgufValueType::kString, {}};
  const GgufArray& merges =
      merges_value == nullptr
          ? kNoMerges
          : gguf_array_of(file, *merges_value, merges_key, {GgufValueType::kString}, "strings");
  vocab.merges.reserve(merges.items.size());
  for (size_t i = 0; i < merges.items.size(); ++i) {
    const std::string& m = merges.items[i].as_string();
    // "left right"; a token never contains a plain space (spaces are spelled U+0120).
    const size_t space = m.find(' ', 1);
    if (space == std::string::npos) {
      throw Error(file.path() + ": metadata '" + merges_key + "'[" + std::to_string(i) + "] = '" +
                  m + "' is not two tokens separated by a space");
    }
    vocab.merges.emplace_back(m.substr(0, space), m.substr(space + 1));
  }

  // Control, user-defined and unknown tokens are matched in the text before BPE.
  for (size_t i = 0; i < n; ++i) {
    const TokenType t = vocab.types[i];
    if ((t == TokenType::kControl || t == TokenType::kUserDefined || t == TokenType::kUnknown) &&
        !vocab.tokens[i].empty()) {
      vocab.added.push_back({static_cast<int32_t>(i), vocab.tokens[i], t != TokenType::kUserDefined,
                             false, false, false});
    }
  }

  vocab.pre_patterns = spec.patterns;
  vocab.ignore_merges = spec.ignore_merges;
  vocab.byte_level = spec.byte_level;
  vocab.whole_newline_runs = spec.whole_newline_runs;

  vocab.bos_id = gguf_special_id(file, "tokenizer.ggml.bos_token_id", -1, n);
  vocab.eos_id = gguf_special_id(file, "tokenizer.ggml.eos_token_id", -1, n);
  vocab.unk_id = gguf_special_id(file, "tokenizer.ggml.unknown_token_id", -1, n);
  vocab.pad_id = gguf_special_id(file, "tokenizer.ggml.padding_token_id", -1, n);
  vocab.eot_id = gguf_special_id(file, "tokenizer.ggml.eot_token_id", -1, n);
  vocab.eom_id = gguf_special_id(file, "tokenizer.ggml.eom_token_id", -1, n);
  vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", spec.add_bos);
  vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);

  try {
    return std::make_unique<BpeTokenizer>(std::move(vocab));
  } catch (const Error& e) {
    throw Error(file.path() + ": " + e.what(), e.code());
  }
}

std::unique_ptr<Tokenizer> load_gguf_wordpiece(const GgufFile& file) {
  WordPieceVocab vocab;
  vocab.tokens = gguf_tokens(file);
  const size_t n = vocab.tokens.size();
  vocab.types = gguf_token_types(file, n);
  vocab.unk_id = gguf_special_id(file, "tokenizer.ggml.unknown_token_id", 100, n);
  vocab.cls_id = gguf_special_id(file, "tokenizer.ggml.cls_token_id", 101, n);
  // llama.cpp writes "seperator"; accept the correct spelling too.
  const int32_t sep = gguf_special_id(file, "tokenizer.ggml.separator_token_id", 102, n);
  vocab.sep_id = gguf_special_id(file, "tokenizer.ggml.seperator_token_id", sep, n);
  vocab.pad_id = gguf_special_id(file, "tokenizer.ggml.padding_token_id", 0, n);
  vocab.mask_id = gguf_special_id(file, "tokenizer.ggml.mask_token_id", 103, n);
  vocab.add_cls = file.get_bool("tokenizer.ggml.add_bos_token", true);
  vocab.add_sep = file.get_bool("tokenizer.ggml.add_sep_token",
                                file.get_bool("tokenizer.ggml.add_eos_token", true));
  try {
    return std::make_unique<WordPieceTokenizer>(std::move(vocab));
  } catch (const Error& e) {
    throw Error(file.path() + ": " + e.what(), e.code());
  }
}

}  // namespace loom
