// Pre-tokenization for byte-level BPE: the text is cut into words by a sequence of steps, each
// one splitting the pieces the previous one left, and BPE then runs per word. A step is a
// regular expression that splits "Isolated" (Hugging Face's term): its matches and the text
// between them both become pieces, and an empty match (a lookahead) cuts where it matches.
// Expressions are PCRE2 with UTF + UCP (\p{L}, \s, ... are Unicode classes) and JIT-compiled;
// matching is const and thread-safe (match data is per thread). One step is not an expression:
// kDigitGroupsStep stands for llama.cpp's hand-coded digit grouping (see DigitGroupSplitter).
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace loom {

// One step of a pre-tokenizer: appends the pieces of `text` (valid UTF-8) to out, in order,
// covering text exactly.
class Splitter {
 public:
  virtual ~Splitter() = default;
  virtual void split(std::string_view text, std::vector<std::string_view>& out) const = 0;
};

class RegexSplitter final : public Splitter {
 public:
  // Throws loom::Error naming the pattern and PCRE2's message and offset.
  explicit RegexSplitter(const std::string& pattern);
  ~RegexSplitter() override;
  RegexSplitter(const RegexSplitter&) = delete;
  RegexSplitter& operator=(const RegexSplitter&) = delete;

  void split(std::string_view text, std::vector<std::string_view>& out) const override;
  const std::string& pattern() const { return pattern_; }

 private:
  std::string pattern_;
  void* code_ = nullptr;  // pcre2_code_8*
  bool jit_ = false;      // compiled to machine code: matched by pcre2_jit_match()
};

// llama.cpp's digit grouping for AFMoE and Tiny Aya (its unicode_regex_split_custom_afmoe): a
// run of \p{N} is cut into groups of three counted from the right (1234567 -> 1 234 567), and
// the text since the previous run's end travels with the first group of the next run
// ("ab  1234" -> "ab  1", "234"). That last part is llama.cpp's own; it is kept because the
// expression after it splits "  1" differently from "  " + "1" (\s+(?!\S) sees the digit).
class DigitGroupSplitter final : public Splitter {
 public:
  void split(std::string_view text, std::vector<std::string_view>& out) const override;
};
extern const char* const kDigitGroupsStep;  // the step name that selects DigitGroupSplitter

class PreTokenizer {
 public:
  explicit PreTokenizer(const std::vector<std::string>& patterns);

  // The words of `text` (valid UTF-8), views into it, in order, covering it exactly.
  void split(std::string_view text, std::vector<std::string_view>& words) const;
  size_t size() const { return splitters_.size(); }

 private:
  std::vector<std::unique_ptr<Splitter>> splitters_;
};

// What llama.cpp's GGUF `tokenizer.ggml.pre` names stand for (pre_tokenizer_gguf.cpp): the
// steps and the vocabulary's quirks. Throws loom::Error (LOOM_ERR_UNSUPPORTED) naming the value
// and every name Loom knows when it is not one of them.
struct PreTokenizerSpec {
  std::vector<std::string> patterns;
  bool ignore_merges = false;     // a word that is itself a token is taken whole (Llama 3)
  bool add_bos = false;           // llama.cpp's default for the family when the GGUF does not say
  bool merges_optional = false;   // the GGUF may have no tokenizer.ggml.merges (Kimi K2)
  bool byte_level = true;         // false: BPE over raw UTF-8 with U+2581 spaces (Gemma 4)
  bool whole_newline_runs = false;  // a word of only '\n' that is a token is taken whole
};
PreTokenizerSpec pre_tokenizer_for_gguf(const std::string& pre);
std::vector<std::string> known_gguf_pre_tokenizers();  // every name, in llama.cpp's order

// Pattern sources HF tokenizer.json pre-tokenizers imply without stating them.
extern const char* const kGpt2Pattern;  // ByteLevel with use_regex = true
std::string regex_escape(std::string_view literal);

}  // namespace loom
