// The tokenizer interface the engine and the server use. Implementations: SentencePiece-style BPE
// (spm_tokenizer.hpp), byte-level BPE (bpe_tokenizer.hpp) and WordPiece (wordpiece_tokenizer.hpp).
// Hugging Face tokenizer.json files load with load_tokenizer_json() (tokenizer_json.hpp).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

class GgufFile;

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Text -> ids. add_special adds what the model's files ask for at the start (BOS when
  // add_bos is set) and end (EOS when add_eos is set). Special-token text ("<s>") in `text` is
  // matched as the special token only when parse_special is true.
  virtual std::vector<int32_t> encode(std::string_view text, bool add_special,
                                      bool parse_special = false) const = 0;

  // The raw bytes one token stands for (byte-fallback tokens give their byte, the SentencePiece
  // space marker becomes ' '); control tokens give "" unless render_special.
  virtual std::string token_to_piece(int32_t id, bool render_special = false) const = 0;

  // Ids -> text, as the model's own decoder does it (e.g. SentencePiece drops the space it
  // added in front of the first word). May end in an incomplete UTF-8 sequence.
  virtual std::string decode(std::span<const int32_t> ids, bool render_special = false) const = 0;

  virtual int32_t vocab_size() const = 0;
  virtual int32_t bos_id() const = 0;  // -1 when the model has none
  virtual int32_t eos_id() const = 0;  // -1 when the model has none
  // True for every end-of-generation token (EOS, EOT, ...).
  virtual bool is_eog(int32_t id) const = 0;
  virtual bool is_control(int32_t id) const = 0;
};

// The tokenizer stored in a GGUF file's metadata (tokenizer.ggml.*): tokenizer.ggml.model "llama"
// (SentencePiece BPE), "gpt2" (byte-level BPE, pre-tokenizer from tokenizer.ggml.pre) or "bert"
// (WordPiece). Throws loom::Error when the file has no tokenizer or one of a model type that is
// not supported (naming it).
std::unique_ptr<Tokenizer> load_tokenizer(const GgufFile& file);

}  // namespace loom
