// A Hugging Face tokenizer.json (byte-level BPE) as GGUF tokenizer.ggml.* metadata, the way
// llama.cpp's loader reads it: model "gpt2", tokens by id, token types, merges, the pre-tokenizer
// named by tokenizer.ggml.pre, special ids and add_bos / add_eos.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom::convert {

using GgufMetadata = std::vector<std::pair<std::string, GgufValue>>;

// The tokenizer.ggml.pre name whose expressions (pre_tokenizer_for_gguf) are the Split regexes
// of tokenizer.json's pre_tokenizer (a ByteLevel with use_regex adds GPT-2's), after spelling
// "(?i:'s|..)" as Loom's case classes; ignore_merges must agree too. Throws loom::Error naming
// the expression when no supported family has it.
std::string gguf_pre_tokenizer_name(const std::string& tokenizer_json_path);
// The same for tokenizer.json already parsed (path: for messages).
std::string gguf_pre_tokenizer_name(const nlohmann::json& tokenizer_json, const std::string& path);

// Metadata for `dir`/tokenizer.json. n_vocab: rows of the embedding (ids the tokenizer lacks are
// written as unused "[PAD<id>]"); tok: the same tokenizer as Loom loads it (special ids, add_bos
// / add_eos as it behaves); eog_ids: the model's end-of-generation ids (generation_config.json),
// the first that is not EOS becomes tokenizer.ggml.eot_token_id.
GgufMetadata hf_tokenizer_metadata(const std::string& dir, int64_t n_vocab, const Tokenizer& tok,
                                   const std::vector<int32_t>& eog_ids);

}  // namespace loom::convert
