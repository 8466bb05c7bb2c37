// RegexSplitter (PCRE2, UTF + UCP, JIT), DigitGroupSplitter and PreTokenizer.
#define PCRE2_CODE_UNIT_WIDTH 8
#include "core/tokenizer/pre_tokenizer.hpp"

#include <pcre2.h>
#include <utf8proc.h>

#include <string>

#include "core/common/error.hpp"

namespace loom {

const char* const kGpt2Pattern =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";
// Not a valid PCRE2 expression (no such property), so no tokenizer.json pattern can mean it.
const char* const kDigitGroupsStep = "\\p{Loom_digit_groups}";

namespace {

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
      // An empty match (a lookahead) cuts the text where it matches, as Hugging Face's and
      // llama.cpp's splitters both do; the search goes on one character later.
      if (begin > done) out.push_back(text.substr(done, begin - done));
      done = begin;
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

void DigitGroupSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  const auto* bytes = reinterpret_cast<const utf8proc_uint8_t*>(text.data());
  const auto n = static_cast<utf8proc_ssize_t>(text.size());
  size_t done = 0;         // text before this is in out
  std::vector<size_t> run;  // byte offsets where the digits of the current run begin
  const auto cut = [&](size_t at) {
    if (at > done) out.push_back(text.substr(done, at - done));
    done = at;
  };
  for (utf8proc_ssize_t pos = 0; pos < n;) {
    // Collect one run of \p{N} (its characters' starts), or step over one other character.
    run.clear();
    utf8proc_ssize_t next = pos;
    while (next < n) {
      utf8proc_int32_t cp = 0;
      const utf8proc_ssize_t len = utf8proc_iterate(bytes + next, n - next, &cp);
      if (len <= 0) break;  // cannot happen on valid UTF-8
      const utf8proc_category_t cat = utf8proc_category(cp);
      const bool digit = cat == UTF8PROC_CATEGORY_ND || cat == UTF8PROC_CATEGORY_NL ||
                         cat == UTF8PROC_CATEGORY_NO;
      if (!digit) {
        if (run.empty()) next += len;
        break;
      }
      run.push_back(static_cast<size_t>(next));
      next += len;
    }
    if (!run.empty()) {
      run.push_back(static_cast<size_t>(next));  // the run's end, as one more boundary
      const size_t digits = run.size() - 1;
      // The first group holds digits % 3 (when non-zero) and everything since `done`.
      for (size_t i = digits % 3 == 0 ? 3 : digits % 3; i <= digits; i += 3) cut(run[i]);
    }
    pos = next;
  }
  cut(text.size());
}

PreTokenizer::PreTokenizer(const std::vector<std::string>& patterns) {
  for (const std::string& p : patterns) {
    if (p == kDigitGroupsStep) {
      splitters_.push_back(std::make_unique<DigitGroupSplitter>());
    } else {
      splitters_.push_back(std::make_unique<RegexSplitter>(p));
    }
  }
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

std::string regex_escape(std::string_view literal) {
  std::string out;
  for (const char c : literal) {
    if (std::string_view("\\^$.|?*+()[]{}-/").find(c) != std::string_view::npos) out += '\\';
    out += c;
  }
  return out;
}

}  // namespace loom
