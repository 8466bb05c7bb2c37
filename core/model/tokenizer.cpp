// load_tokenizer(): the tokenizer.ggml.* metadata of a GGUF file -> a Tokenizer.
#include "core/model/tokenizer.hpp"

#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/model/gguf_file.hpp"
#include "core/model/spm_tokenizer.hpp"

namespace loom {

namespace {

constexpr const char* kSupportedModels = "llama (SentencePiece BPE)";

const GgufArray& array_of(const GgufFile& file, const GgufValue& v, const std::string& key,
                          std::initializer_list<GgufValueType> elem_types, const char* expected) {
  if (v.type == GgufValueType::kArray) {
    const GgufArray& a = v.as_array();
    for (const GgufValueType t : elem_types) {
      if (a.type == t) return a;
    }
    throw Error(file.path() + ": metadata '" + key + "' must be an array of " + expected +
                ", got an array of " + gguf_type_name(a.type));
  }
  throw Error(file.path() + ": metadata '" + key + "' must be an array of " + expected +
              ", got " + gguf_type_name(v.type));
}

// Special ids are uint32 in GGUF; 0xFFFFFFFF (or -1) means "none", as llama.cpp writes it.
int32_t special_id(const GgufFile& file, const std::string& key, int32_t fallback,
                   size_t n_vocab) {
  const int64_t id = file.get_int(key, fallback);
  if (id == -1 || id == 0xFFFFFFFFLL) return -1;
  if (id < 0 || static_cast<uint64_t>(id) >= n_vocab) {
    throw Error(file.path() + ": metadata '" + key + "' = " + std::to_string(id) +
                " is outside the vocabulary of " + std::to_string(n_vocab) + " tokens");
  }
  return static_cast<int32_t>(id);
}

std::unique_ptr<Tokenizer> load_spm(const GgufFile& file) {
  SpmVocab vocab;
  const std::string tokens_key = "tokenizer.ggml.tokens";
  const GgufArray& tokens =
      array_of(file, file.get(tokens_key), tokens_key, {GgufValueType::kString}, "strings");
  if (tokens.items.empty()) throw Error(file.path() + ": metadata '" + tokens_key + "' is empty");
  const size_t n = tokens.items.size();
  vocab.tokens.reserve(n);
  for (const GgufValue& t : tokens.items) vocab.tokens.push_back(t.as_string());

  const std::string scores_key = "tokenizer.ggml.scores";
  if (const GgufValue* v = file.find(scores_key)) {
    const GgufArray& scores = array_of(file, *v, scores_key,
                                       {GgufValueType::kFloat32, GgufValueType::kFloat64}, "floats");
    if (scores.items.size() != n) {
      throw Error(file.path() + ": metadata '" + scores_key + "' has " +
                  std::to_string(scores.items.size()) + " entries for " + std::to_string(n) +
                  " tokens");
    }
    vocab.scores.reserve(n);
    for (const GgufValue& s : scores.items) vocab.scores.push_back(static_cast<float>(s.as_float()));
  }

  const std::string types_key = "tokenizer.ggml.token_type";
  if (const GgufValue* v = file.find(types_key)) {
    const GgufArray& types = array_of(
        file, *v, types_key,
        {GgufValueType::kInt32, GgufValueType::kUint32, GgufValueType::kInt8, GgufValueType::kUint8,
         GgufValueType::kInt16, GgufValueType::kUint16, GgufValueType::kInt64,
         GgufValueType::kUint64},
        "integers");
    if (types.items.size() != n) {
      throw Error(file.path() + ": metadata '" + types_key + "' has " +
                  std::to_string(types.items.size()) + " entries for " + std::to_string(n) +
                  " tokens");
    }
    vocab.types.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const int64_t t = types.items[i].as_int();
      if (t < 0 || t > static_cast<int64_t>(TokenType::kByte)) {
        throw Error(file.path() + ": metadata '" + types_key + "'[" + std::to_string(i) +
                    "] = " + std::to_string(t) + " is not a token type (0..6)");
      }
      vocab.types.push_back(static_cast<TokenType>(t));
    }
  }

  // Defaults are llama.cpp's for SentencePiece vocabularies.
  vocab.bos_id = special_id(file, "tokenizer.ggml.bos_token_id", 1, n);
  vocab.eos_id = special_id(file, "tokenizer.ggml.eos_token_id", 2, n);
  vocab.unk_id = special_id(file, "tokenizer.ggml.unknown_token_id", 0, n);
  vocab.pad_id = special_id(file, "tokenizer.ggml.padding_token_id", -1, n);
  vocab.eot_id = special_id(file, "tokenizer.ggml.eot_token_id", -1, n);
  vocab.eom_id = special_id(file, "tokenizer.ggml.eom_token_id", -1, n);
  vocab.add_bos = file.get_bool("tokenizer.ggml.add_bos_token", true);
  vocab.add_eos = file.get_bool("tokenizer.ggml.add_eos_token", false);
  vocab.add_space_prefix = file.get_bool("tokenizer.ggml.add_space_prefix", true);

  try {
    return std::make_unique<SpmTokenizer>(std::move(vocab));
  } catch (const Error& e) {
    throw Error(file.path() + ": " + e.what(), e.code());
  }
}

}  // namespace

std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& file) {
  const GgufValue* model = file.find("tokenizer.ggml.model");
  if (model == nullptr) {
    throw Error(file.path() + ": no tokenizer: metadata 'tokenizer.ggml.model' is missing " +
                    "(supported: " + kSupportedModels + ")",
                LOOM_ERR_NOT_FOUND);
  }
  if (model->type != GgufValueType::kString) {
    throw Error(file.path() + ": metadata 'tokenizer.ggml.model' must be a string, got " +
                gguf_type_name(model->type));
  }
  const std::string& name = model->as_string();
  if (name == "llama") return load_spm(file);
  throw Error(file.path() + ": tokenizer.ggml.model '" + name + "' is not supported (supported: " +
                  kSupportedModels + ")",
              LOOM_ERR_UNSUPPORTED);
}

}  // namespace loom
