// A sentence-embedding model as sentence-transformers lays it out in a Hugging Face directory:
// the BERT encoder (config.json + safetensors), its WordPiece tokenizer (tokenizer.json), the
// pooling of 1_Pooling/config.json (mean or CLS), normalisation when modules.json lists a
// Normalize module, and the length limit of sentence_bert_config.json (max_seq_length).
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "core/common/thread_pool.hpp"
#include "core/executor/bert_encoder.hpp"
#include "core/formats/safetensors_file.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {

class SentenceEncoder {
 public:
  // Throws loom::Error naming the file and field at fault. `threads` must outlive the encoder.
  static std::unique_ptr<SentenceEncoder> open(const std::string& dir, ThreadPool& threads);

  const std::string& path() const { return path_; }
  const Tokenizer& tokenizer() const { return *tokenizer_; }
  int32_t dim() const { return encoder_->dim(); }
  int32_t vocab_size() const { return encoder_->hparams().vocab_size; }
  // The longest input in tokens, [CLS] and [SEP] included.
  int32_t max_tokens() const { return max_tokens_; }
  bool normalized() const { return normalize_; }

  // [CLS] text [SEP], special-token text ("[SEP]") matched as the Hugging Face tokenizer does.
  std::vector<int32_t> tokenize(std::string_view text) const;
  // [seqs.size(), dim]. Not thread-safe: one caller at a time (the embedding worker).
  std::vector<float> embed(std::span<const std::vector<int32_t>> seqs) { return encoder_->embed(seqs); }

 private:
  SentenceEncoder() = default;
  std::string path_;
  std::unique_ptr<Tokenizer> tokenizer_;
  std::unique_ptr<BertEncoder> encoder_;
  int32_t max_tokens_ = 0;
  bool normalize_ = true;
};

}  // namespace loom
