// Unicode normalisation for tokenizers that ask for it (tokenizer.json "normalizer", BERT's
// lowercasing and accent stripping), done by utf8proc.
#pragma once

#include <string>
#include <string_view>

namespace loom {

enum class NormalForm { kNone, kNfc, kNfd, kNfkc, kNfkd };

// "NFC" -> kNfc, ...; throws loom::Error naming an unknown name.
NormalForm normal_form_from_name(std::string_view name);

// s (valid UTF-8) in the given form; kNone returns s unchanged.
std::string unicode_normalize(std::string_view s, NormalForm form);

}  // namespace loom
