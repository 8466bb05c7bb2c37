#include "core/grammar/token_vocabulary.hpp"

#include <algorithm>

#include "core/tokenizer/tokenizer.hpp"

namespace loom {

TokenVocabulary::TokenVocabulary(std::vector<std::string> token_bytes, std::vector<int32_t> eog)
    : bytes(std::move(token_bytes)), eog_ids(std::move(eog)) {
  for (int32_t id = 0; id < size(); ++id) {
    if (!bytes[id].empty() && std::find(eog_ids.begin(), eog_ids.end(), id) == eog_ids.end()) order.push_back(id);
  }
  std::sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return bytes[a] < bytes[b]; });
  common_prefix.assign(order.size(), 0);
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string& cur = bytes[order[i]];
    max_length = std::max(max_length, cur.size());
    if (i == 0) continue;
    const std::string& prev = bytes[order[i - 1]];
    size_t n = 0;
    while (n < prev.size() && n < cur.size() && prev[n] == cur[n]) ++n;
    common_prefix[i] = static_cast<uint32_t>(n);
  }
}

TokenVocabulary vocabulary_of(const Tokenizer& tokenizer) {
  const int32_t n = tokenizer.vocab_size();
  std::vector<std::string> bytes(static_cast<size_t>(n));
  std::vector<int32_t> eog;
  for (int32_t id = 0; id < n; ++id) {
    if (tokenizer.is_eog(id)) {
      eog.push_back(id);
      continue;
    }
    bytes[static_cast<size_t>(id)] = tokenizer.token_to_piece(id, false);
  }
  return TokenVocabulary(std::move(bytes), std::move(eog));
}

}  // namespace loom
