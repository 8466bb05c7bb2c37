// load_tokenizer(): the tokenizer.ggml.* metadata of a GGUF file -> a Tokenizer.
#include "core/tokenizer/tokenizer.hpp"

#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/gguf_tokenizer_keys.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"

namespace loom {

namespace {

constexpr const char* kSupportedModels =
    "llama (SentencePiece BPE), gpt2 (byte-level BPE), gemma4 (UTF-8 BPE), bert (WordPiece)";

std::unique_ptr<Tokenizer> load_spm(const GgufFile& file) {
  SpmVocab vocab;
  vocab.tokens = gguf_tokens(file);
  const size_t n = vocab.tokens.size();

  const std::string scores_key = "tokenizer.ggml.scores";
  if (const GgufValue* v = file.find(scores_key)) {
    const GgufArray& scores = gguf_array_of(
        file, *v, scores_key, {GgufValueType::kFloat32, GgufValueType::kFloat64}, "floats");
    if (scores.items.size() != n) {
      throw Error(file.path() + ": metadata '" + scores_key + "' has " +
                  std::to_string(scores.items.size()) + " entries for " + std::to_string(n) +
                  " tokens");
    }
    vocab.scores.reserve(n);
    for (const GgufValue& s : scores.items) vocab.scores.push_back(static_cast<float>(s.as_float()));
  }

  vocab.types = gguf_token_types(file, n);

  // Defaults are llama.cpp's for SentencePiece vocabularies.
  vocab.bos_id = gguf_special_id(file, "tokenizer.ggml.bos_token_id", 1, n);
  vocab.eos_id = gguf_special_id(file, "tokenizer.ggml.eos_token_id", 2, n);
  vocab.unk_id = gguf_special_id(file, "tokenizer.ggml.unknown_token_id", 0, n);
  vocab.pad_id = gguf_special_id(file, "tokenizer.ggml.padding_token_id", -1, n);
  vocab.eot_id = gguf_special_id(file, "tokenizer.ggml.eot_token_id", -1, n);
  vocab.eom_id = gguf_special_id(file, "tokenizer.ggml.eom_token_id", -1, n);
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
  if (name == "gpt2" || name == "gemma4") return load_gguf_bpe(file);
  if (name == "bert") return load_gguf_wordpiece(file);
  throw Error(file.path() + ": tokenizer.ggml.model '" + name + "' is not supported (supported: " +
                  kSupportedModels + ")",
              LOOM_ERR_UNSUPPORTED);
}

}  // namespace loom
