// RegexSplitter and PreTokenizer over PCRE2 (UTF + UCP, JIT).
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/tokenizer/pre_tokenizer.hpp"

#include <pcre2.h>

#include <string>

#include "core/common/error.hpp"

namespace loom {

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

namespace {

// Llama 3's expression; Qwen2's is the same with single digits.
const char* const kLlama3Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2Pattern =
    "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

constexpr const char* kSupportedPre =
    "gpt-2, llama-bpe, llama3, smaug-bpe, dbrx, qwen2, stablelm2, deepseek-coder, starcoder, "
    "refact, smollm, codeshell";

// Per-thread PCRE2 state: match data (ovector) and a JIT stack big enough for long runs of
// whitespace. Created on first use in a thread, freed when the thread ends.
struct MatchState {
  pcre2_match_data* data = nullptr;
  pcre2_match_context* context = nullptr;
  pcre2_jit_stack* stack = nullptr;
  MatchState() {
    data = pcre2_match_data_create(16, nullptr);
    context = pcre2_match_context_create(nullptr);
    stack = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, nullptr);
    if (data == nullptr || context == nullptr || stack == nullptr) {
      throw Error("pre-tokenizer: out of memory for PCRE2 match data", LOOM_ERR_OUT_OF_MEMORY);
    }
    pcre2_jit_stack_assign(context, nullptr, stack);
  }
  ~MatchState() {
    pcre2_jit_stack_free(stack);
    pcre2_match_context_free(context);
    pcre2_match_data_free(data);
  }
  MatchState(const MatchState&) = delete;
  MatchState& operator=(const MatchState&) = delete;
};

MatchState& match_state() {
  thread_local MatchState state;
  return state;
}

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

RegexSplitter::RegexSplitter(const std::string& pattern) : pattern_(pattern) {
  int err = 0;
  PCRE2_SIZE offset = 0;
  pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                   PCRE2_UTF | PCRE2_UCP, &err, &offset, nullptr);
  if (code == nullptr) {
    throw Error("pre-tokenizer pattern '" + pattern + "': " + pcre2_message(err) + " at offset " +
                std::to_string(offset));
  }
  // JIT is an optimisation: where it is unavailable, pcre2_match() interprets.
  jit_ = pcre2_jit_compile(code, PCRE2_JIT_COMPLETE) == 0;
  code_ = code;
}

RegexSplitter::~RegexSplitter() { pcre2_code_free(static_cast<pcre2_code*>(code_)); }

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  MatchState& st = match_state();
  auto* code = static_cast<pcre2_code*>(code_);
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0;   // where the next search starts
  size_t done = 0;  // text before this is in out
  while (pos < text.size()) {
    // NO_UTF_CHECK: callers pass valid UTF-8 (the tokenizer sanitizes its input once).
    const int rc =
        jit_ ? pcre2_jit_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, st.data,
                               st.context)
             : pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, st.data, st.context);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) {
      throw Error("pre-tokenizer pattern '" + pattern_ + "': " + pcre2_message(rc),
                  LOOM_ERR_INTERNAL);
    }
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(st.data);
    const size_t begin = ov[0];
    const size_t end = ov[1];
    if (end == begin) {
      // An empty match cuts nothing; step over one character and search again.
      pos = begin + 1;
      while (pos < text.size() && (static_cast<uint8_t>(text[pos]) & 0xC0) == 0x80) ++pos;
      continue;
    }
    if (begin > done) out.push_back(text.substr(done, begin - done));
    out.push_back(text.substr(begin, end - begin));
    done = pos = end;
  }
  if (done < text.size()) out.push_back(text.substr(done));
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) splitters_.push_back(std::make_unique<RegexSplitter>(p));
}

void PreTokenizer::split(std::string_view text, std::vector<std::string_view>& words) const {
  words.clear();
  if (text.empty()) return;
  words.push_back(text);
  std::vector<std::string_view> next;
  for (const auto& s : splitters_) {
    next.clear();
    for (const std::string_view w : words) s->split(w, next);
    words.swap(next);
  }
}

PreTokenizerSpec pre_tokenizer_for_gguf(const std::string& pre) {
  PreTokenizerSpec spec;
  if (pre == "gpt-2" || pre == "default") {
    spec.patterns = {kGpt2Pattern};
  } else if (pre == "llama-bpe" || pre == "llama3" || pre == "llama-v3" || pre == "smaug-bpe" ||
             pre == "dbrx") {
    spec.patterns = {kLlama3Pattern};
    spec.ignore_merges = true;
    spec.add_bos = true;
  } else if (pre == "qwen2" || pre == "stablelm2") {
    spec.patterns = {kQwen2Pattern};
  } else if (pre == "deepseek-coder") {
    // Line breaks, letters, punctuation, CJK runs and single digits, each a word of its own
    // (the Split sequence of DeepSeek-Coder's tokenizer.json).
    spec.patterns = {
        "[\\r\\n]", "\\s?\\p{L}+", "\\s?\\p{P}+",
        "[\xE4\xB8\x80-\xE9\xBE\xA5\xE0\xA0\x80-\xE4\xB8\x80\xEA\xB0\x80-\xED\x9F\xBF]+", "\\p{N}"};
  } else if (pre == "starcoder" || pre == "refact" || pre == "smollm" || pre == "codeshell") {
    // Single digits first, then GPT-2's expression.
    spec.patterns = {"\\p{N}", kGpt2Pattern};
  } else {
    throw Error(
        "tokenizer.ggml.pre '" + pre + "' is not supported (supported: " + kSupportedPre + ")",
        LOOM_ERR_UNSUPPORTED);
  }
  return spec;
}

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (const char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace loom
