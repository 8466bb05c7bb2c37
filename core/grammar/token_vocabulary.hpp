// The vocabulary as the grammar sees it: each token's bytes, computed once per tokenizer, and
// the tokens sorted by those bytes so a walk visits shared prefixes once (the sorted order with
// the common-prefix length of neighbours is a trie laid out flat).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace loom {

class Tokenizer;

struct TokenVocabulary {
  // bytes[id]: what the token adds to the text (byte-fallback tokens their byte, byte-level
  // BPE tokens their decoded bytes, SentencePiece's marker a space). Control tokens have none
  // and can never be chosen under a grammar.
  std::vector<std::string> bytes;
  std::vector<int32_t> eog_ids;  // end-of-generation tokens: allowed where the grammar is complete
  std::vector<int32_t> order;    // ids with non-empty bytes, sorted by bytes
  std::vector<uint32_t> common_prefix;  // [i]: bytes shared by order[i - 1] and order[i]; [0] = 0
  size_t max_length = 0;

  TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eog);
  int32_t size() const { return static_cast<int32_t>(bytes.size()); }
};

// token_to_piece for every id, is_eog for the end tokens.
TokenVocabulary vocabulary_of(const Tokenizer& tokenizer);

}  // namespace loom
