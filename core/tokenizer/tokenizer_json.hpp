// Hugging Face tokenizers: tokenizer.json (+ tokenizer_config.json beside it) -> a Tokenizer.
// Supported: model "WordPiece" (wordpiece_json.hpp), and model "BPE" with a ByteLevel pre-tokenizer (GPT-2, Llama 3, Qwen2/3, DeepSeek ...):
// normalizer null | NFC | NFD | NFKC | NFKD (or a Sequence of one); pre_tokenizer ByteLevel,
// Split (Isolated, regex or string), Digits, Sequence of these; added_tokens with their
// special/lstrip/rstrip flags; add_bos/add_eos from tokenizer_config.json's add_bos_token /
// add_eos_token, else from a TemplateProcessing post_processor; bos/eos from the config's
// bos_token/eos_token. Anything else is refused with loom::Error naming it.
#pragma once

#include <memory>
#include <string>

#include "core/tokenizer/tokenizer.hpp"

namespace loom {

// `path` is a tokenizer.json file or a directory holding one.
std::unique_ptr<Tokenizer> load_tokenizer_json(const std::string& path);

}  // namespace loom
