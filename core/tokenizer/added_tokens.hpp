// Added tokens (special and user-defined) are cut out of the text before pre-tokenization, as
// Hugging Face tokenizers and llama.cpp do: a match anywhere becomes its token and the text
// around it is tokenized on its own. Matching is leftmost-longest. `special` tokens (control
// tokens: "<|eot_id|>") match only when the caller parses special text; the others always.
// lstrip/rstrip make the token absorb the ASCII whitespace before/after it.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

struct AddedToken {
  int32_t id = -1;
  std::string content;  // raw text as it appears in the input
  bool special = true;
  bool lstrip = false;
  bool rstrip = false;
  // HF's flag, kept for callers; Loom matches every added token in the raw text, before
  // normalisation (the same for the NFC/NFKC of real vocabularies' ASCII special tokens).
  bool normalized = false;
};

class AddedTokenMatcher {
 public:
  AddedTokenMatcher() = default;
  explicit AddedTokenMatcher(std::vector<AddedToken> tokens);

  // A run of input that is plain text (token < 0) or one added token.
  struct Fragment {
    int32_t token = -1;
    std::string_view text;
  };
  // Cuts `text` into fragments, in order; plain fragments are never empty.
  void split(std::string_view text, bool parse_special, std::vector<Fragment>& out) const;

  const std::vector<AddedToken>& tokens() const { return tokens_; }
  const AddedToken* find(int32_t id) const;  // nullptr when id is not an added token

 private:
  std::vector<AddedToken> tokens_;
  std::array<std::vector<uint32_t>, 256> by_first_byte_;  // indices into tokens_, longest first
};

}  // namespace loom
