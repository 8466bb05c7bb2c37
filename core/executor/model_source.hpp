// Where a model comes from, so the rest of the engine does not care: a GGUF file, or a Hugging
// Face directory (config.json, generation_config.json, model.safetensors or shards with an
// index, tokenizer.json, tokenizer_config.json). Either way it yields the executor's hparams and
// weight views (GGUF tensor names), the tokenizer and the chat template. The mappings the views
// point into live as long as the source.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/executor/llama_model.hpp"
#include "core/template/chat_template.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/safetensors_file.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {

class ModelSource {
 public:
  // A directory is read as a Hugging Face model, anything else as a GGUF file. Throws
  // loom::Error naming the file and field at fault (unsupported architectures with the list).
  static std::unique_ptr<ModelSource> open(const std::string& path);

  const std::string& path() const { return path_; }
  bool is_hf_dir() const { return ckpt_ != nullptr; }
  const GgufFile* gguf() const { return gguf_ ? &*gguf_ : nullptr; }  // nullptr for a directory
  const SafetensorsCheckpoint* safetensors() const { return ckpt_.get(); }
  const LlamaWeights& weights() const { return weights_; }
  const LlamaHparams& hparams() const { return weights_.hparams; }

  // The Jinja chat template (tokenizer_config.json chat_template / GGUF tokenizer.chat_template);
  // empty when the model ships none.
  const std::string& chat_template() const { return chat_template_; }
  // End-of-generation ids from generation_config.json / config.json eos_token_id (a number or a
  // list), empty for GGUF (its tokenizer knows them).
  const std::vector<int32_t>& eos_token_ids() const { return eos_ids_; }
  // The model's tokenizer: GGUF metadata, or the directory's tokenizer.json.
  std::unique_ptr<Tokenizer> load_tokenizer() const;
  // The chat template parsed (GGUF metadata or tokenizer_config.json), nullptr when none; throws
  // loom::Error when the template does not parse.
  std::unique_ptr<ChatTemplate> load_chat_template() const;

 private:
  ModelSource() = default;
  std::string path_;
  std::optional<GgufFile> gguf_;
  std::unique_ptr<SafetensorsCheckpoint> ckpt_;
  LlamaWeights weights_;
  std::string chat_template_;
  std::vector<int32_t> eos_ids_;
};

}  // namespace loom
