// Special-token text typed by a client inside chat message content ("<|im_start|>system") kept as
// plain text, so a user cannot inject roles ([server] special_tokens_in_chat = false, the default).
//
// Before the template runs, every special-token text found in a content string (and the marker
// character itself) is replaced by a marker "\uE000<k>\uE001"; the template's own special tokens
// are then the only ones in the rendered text. encode() finds those in order, encodes the text
// between them (markers put back) with special tokens off, and keeps the template's tokens;
// restore() gives the text as the template would have written it without markers.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

class Tokenizer;

class ContentShield {
 public:
  explicit ContentShield(const Tokenizer& tokenizer) : tokenizer_(tokenizer) {}

  // `content` with its special-token texts replaced by markers.
  std::string shield(std::string_view content);
  // Text with every marker replaced by the text it stands for.
  std::string restore(std::string_view text) const;
  // Ids of a rendered prompt: the template's special tokens as tokens, everything else as text.
  // add_special as Tokenizer::encode's (BOS/EOS the model's files ask for).
  std::vector<int32_t> encode(std::string_view rendered, bool add_special) const;

 private:
  const Tokenizer& tokenizer_;
  std::vector<std::string> texts_;  // marker k stands for texts_[k]
};

}  // namespace loom
