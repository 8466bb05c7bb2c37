// Pre-tokenization for byte-level BPE: the text is cut into words by regular expressions, applied
// in sequence (each one splits the pieces the previous one left), and BPE then runs per word.
// Each expression splits "Isolated" (Hugging Face's term): its matches and the text between
// them both become pieces. Expressions are PCRE2 with UTF + UCP (\p{L}, \s, ... are Unicode
// classes) and JIT-compiled; matching is const and thread-safe (match data is per thread).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

class RegexSplitter {
 public:
  // Throws loom::Error naming the pattern and PCRE2's message and offset.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter();
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  // Appends the pieces of `text` (valid UTF-8) to out, in order; they cover text exactly.
  void split(std::string_view text, std::vector<std::string_view>& out) const;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;      // compiled to machine code: matched by pcre2_jit_match()
};

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::vector<std::string>& patterns);

  // The words of `text` (valid UTF-8), views into it, in order, covering it exactly.
  void split(std::string_view text, std::vector<std::string_view>& words) const;
  size_t size() const { return splitters_.size(); }

 private:
  std::vector<std::unique_ptr<RegexSplitter>> splitters_;
};

// The expressions llama.cpp's GGUF `tokenizer.ggml.pre` names stand for (those of the families
// Loom supports). Throws loom::Error naming the value and the supported ones. ignore_merges is
// set when the family looks a whole word up before merging (Llama 3).
struct PreTokenizerSpec {
  std::vector<std::string> patterns;
  bool ignore_merges = false;
  bool add_bos = false;  // llama.cpp's default for the family when the GGUF does not say
};
PreTokenizerSpec pre_tokenizer_for_gguf(const std::string& pre);

// Pattern sources HF tokenizer.json pre-tokenizers imply without stating them.
extern const char* const kGpt2Pattern;  // ByteLevel with use_regex = true
std::string regex_escape(std::string_view literal);

}  // namespace loom
