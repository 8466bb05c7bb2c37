#include "tools/bench/prompt_text.hpp"

#include <array>
#include <filesystem>
#include <optional>
#include <vector>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/tokenizer_json.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom::bench {
namespace {

class TokenizerPromptText final : public PromptText {
 public:
  // A Hugging Face model directory or tokenizer.json (what vLLM serves), else a GGUF file.
  explicit TokenizerPromptText(const std::string& path) {
    namespace fs = std::filesystem;
    if (fs::is_directory(path) || fs::path(path).extension() == ".json") {
      tokenizer_ = load_tokenizer_json(path);
    } else {
      file_.emplace(GgufFile::open(path));
      tokenizer_ = load_tokenizer(*file_);
    }
    // Ids that stand for ordinary text: no control or end-of-generation tokens (a prompt must
    // not stop the model or smuggle specials) and no lone bytes of a multi-byte character (the
    // request body must be valid UTF-8).
    for (int32_t id = 0; id < tokenizer_->vocab_size(); ++id) {
      if (tokenizer_->is_control(id) || tokenizer_->is_eog(id)) continue;
      const std::string piece = tokenizer_->token_to_piece(id);
      if (!piece.empty() && utf8_is_valid(piece)) text_ids_.push_back(id);
    }
    if (text_ids_.empty()) throw Error(path + ": the tokenizer has no ordinary text tokens");
  }

  std::string random_text(int64_t n, std::mt19937_64& rng) const override {
    if (n <= 0) return {};
    std::uniform_int_distribution<size_t> pick(0, text_ids_.size() - 1);
    std::vector<int32_t> ids(static_cast<size_t>(n));  // [n]
    for (int32_t& id : ids) id = text_ids_[pick(rng)];
    // Decoding and re-encoding can merge pieces into fewer tokens or split them into more; cut
    // a longer re-encoding back to n (vLLM does the same), a shorter one stays shorter.
    std::string text = tokenizer_->decode(ids);
    std::vector<int32_t> again = tokenizer_->encode(text, false);
    if (static_cast<int64_t>(again.size()) > n) {
      again.resize(static_cast<size_t>(n));
      text = utf8_sanitize(tokenizer_->decode(again));
    }
    return text;
  }

  int64_t count_tokens(std::string_view text) const override {
    return static_cast<int64_t>(tokenizer_->encode(text, false).size());
  }

  bool exact() const override { return true; }

 private:
  std::optional<GgufFile> file_;  // a GGUF tokenizer's file, kept open while the tokenizer lives
  std::unique_ptr<Tokenizer> tokenizer_;
  std::vector<int32_t> text_ids_;
};

class WordPromptText final : public PromptText {
 public:
  std::string random_text(int64_t n, std::mt19937_64& rng) const override {
    std::uniform_int_distribution<size_t> pick(0, kWords.size() - 1);
    std::string text;
    for (int64_t i = 0; i < n; ++i) {
      if (i > 0) text += ' ';
      text += kWords[pick(rng)];
    }
    return text;
  }

  int64_t count_tokens(std::string_view text) const override {
    int64_t words = 0;
    bool in_word = false;
    for (const char c : text) {
      const bool space = c == ' ' || c == '\n' || c == '\t' || c == '\r';
      if (!space && !in_word) ++words;
      in_word = !space;
    }
    return words;
  }

  bool exact() const override { return false; }

 private:
  // Short, frequent English words: most tokenizers give each one a single token.
  static constexpr std::array<const char*, 64> kWords = {
      "the", "a", "and", "to", "of", "in", "is", "it", "that", "was", "he", "she", "for", "on",
      "with", "as", "his", "her", "they", "at", "be", "this", "from", "have", "or", "by", "one",
      "had", "not", "but", "what", "all", "were", "when", "we", "there", "can", "an", "your",
      "which", "their", "said", "if", "do", "will", "each", "about", "how", "up", "out", "them",
      "then", "many", "some", "so", "these", "would", "other", "into", "has", "more", "two",
      "like", "time"};
};

}  // namespace

std::unique_ptr<PromptText> tokenizer_prompt_text(const std::string& path) {
  return std::make_unique<TokenizerPromptText>(path);
}

std::unique_ptr<PromptText> word_prompt_text() { return std::make_unique<WordPromptText>(); }

}  // namespace loom::bench
