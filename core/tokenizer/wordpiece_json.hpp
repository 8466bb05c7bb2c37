// A tokenizer.json whose model is "WordPiece" (BERT, MiniLM, BGE ...) as a WordPieceTokenizer:
// the vocabulary with "##" continuations, the BertNormalizer's options (lowercase and accent
// stripping; clean_text and handle_chinese_chars must be on, as WordPieceTokenizer always does
// them), the BertPreTokenizer, [CLS]/[SEP] from a TemplateProcessing or BertProcessing
// post-processor, and max_input_chars_per_word. Anything else is refused, naming it.
#pragma once

#include <memory>

#include <nlohmann/json.hpp>

#include "core/tokenizer/tokenizer.hpp"

namespace loom {

// j: the parsed tokenizer.json; config: tokenizer_config.json (or an empty object).
std::unique_ptr<Tokenizer> wordpiece_from_tokenizer_json(const nlohmann::json& j, const nlohmann::json& config);

}  // namespace loom
