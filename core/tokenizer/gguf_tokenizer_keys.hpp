// Reading tokenizer.ggml.* metadata: shared by the GGUF tokenizer loaders (tokenizer.cpp,
// gguf_tokenizer_loaders.cpp).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/spm_tokenizer.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {

// v as an array of one of elem_types; throws naming key and `expected` otherwise.
const GgufArray& gguf_array_of(const GgufFile& file, const GgufValue& v, const std::string& key,
                               std::initializer_list<GgufValueType> elem_types,
                               const char* expected);

// Special ids are uint32 in GGUF; 0xFFFFFFFF (or -1) means "none", as llama.cpp writes it.
int32_t gguf_special_id(const GgufFile& file, const std::string& key, int32_t fallback,
                        size_t n_vocab);

std::vector<std::string> gguf_tokens(const GgufFile& file);  // tokenizer.ggml.tokens, non-empty
// tokenizer.ggml.token_type checked against n tokens; empty when absent.
std::vector<TokenType> gguf_token_types(const GgufFile& file, size_t n);

// tokenizer.ggml.model "gpt2" and "bert".
std::unique_ptr<Tokenizer> load_gguf_bpe(const GgufFile& file);
std::unique_ptr<Tokenizer> load_gguf_wordpiece(const GgufFile& file);

}  // namespace loom
