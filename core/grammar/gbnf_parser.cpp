#include "core/grammar/gbnf_parser.hpp"

#include <unordered_map>

#include "core/common/error.hpp"
#include "core/grammar/utf8_ranges.hpp"

namespace loom {
namespace {

bool is_name_char(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

class GbnfParser {
 public:
  explicit GbnfParser(std::string_view text) : text_(text) {}

  Grammar parse() {
    skip_space(true);
    while (pos_ < text_.size()) {
      parse_rule();
      skip_space(true);
    }
    for (const auto& [at, name] : first_use_order_) {
      if (!builder_.is_defined(builder_.rule(name))) fail_at(at, "rule '" + name + "' is used but never defined");
    }
    return builder_.finish("root", std::string(text_));
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    size_t line = 1, col = 1;
    for (size_t i = 0; i < at && i < text_.size(); ++i) {
      if (text_[i] == '\n') {
        ++line;
        col = 1;
      } else {
        ++col;
      }
    }
    throw Error("line " + std::to_string(line) + ", column " + std::to_string(col) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }

  // Spaces, tabs and comments; newlines too when `newlines`.
  void skip_space(bool newlines) {
    while (!at_end()) {
      const char c = text_[pos_];
      if (c == ' ' || c == '\t' || c == '\r' || (newlines && c == '\n')) {
        ++pos_;
      } else if (c == '#') {
        while (!at_end() && text_[pos_] != '\n') ++pos_;
      } else {
        break;
      }
    }
  }

  std::string parse_name() {
    const size_t start = pos_;
    while (!at_end() && is_name_char(text_[pos_])) ++pos_;
    if (pos_ == start) fail("expected a rule name");
    return std::string(text_.substr(start, pos_ - start));
  }

  void parse_rule() {
    const size_t start = pos_;
    const std::string name = parse_name();
    skip_space(false);
    if (text_.substr(pos_, 3) != "::=") fail("expected '::=' after rule name '" + name + "'");
    pos_ += 3;
    skip_space(true);
    const uint32_t r = builder_.rule(name);
    if (builder_.is_defined(r)) fail_at(start, "rule '" + name + "' is defined twice");
    const auto alts = parse_alternatives(name, false);
    builder_.define(r, alts);
    if (!at_end() && peek() != '\n') fail("unexpected '" + std::string(1, peek()) + "'");
  }

  std::vector<SymbolSequence> parse_alternatives(const std::string& rule, bool nested) {
    std::vector<SymbolSequence> alts;
    alts.push_back(parse_sequence(rule, nested));
    while (peek() == '|') {
      ++pos_;
      skip_space(true);
      alts.push_back(parse_sequence(rule, nested));
    }
    return alts;
  }

  SymbolSequence parse_sequence(const std::string& rule, bool nested) {
    SymbolSequence seq;
    for (;;) {
      const char c = peek();
      if (at_end() || c == '|' || c == ')' || c == '\n') break;
      const size_t item_start = pos_;
      SymbolSequence item = parse_item(rule);
      skip_space(nested);
      const char q = peek();
      if (q == '*' || q == '+' || q == '?' || q == '{') {
        if (item.empty()) fail_at(item_start, "nothing to repeat (an empty literal)");
        int64_t min = 0, max = -1;
        if (q == '{') {
          parse_bounds(min, max);
        } else {
          ++pos_;
          min = q == '+' ? 1 : 0;
          max = q == '?' ? 1 : -1;
        }
        try {
          builder_.repeat(builder_.group(item, rule), min, max, rule, seq);
        } catch (const Error& e) {
          fail_at(item_start, e.what());
        }
        skip_space(nested);
      } else {
        seq.insert(seq.end(), item.begin(), item.end());
      }
    }
    return seq;
  }

  int64_t parse_count() {
    const size_t start = pos_;
    int64_t v = 0;
    while (!at_end() && text_[pos_] >= '0' && text_[pos_] <= '9') {
      v = v * 10 + (text_[pos_++] - '0');
      if (v > kMaxRepetition) fail_at(start, "repetition count above " + std::to_string(kMaxRepetition));
    }
    if (pos_ == start) fail("expected a number in '{m,n}'");
    return v;
  }

  void parse_bounds(int64_t& min, int64_t& max) {
    ++pos_;  // '{'
    skip_space(false);
    min = parse_count();
    skip_space(false);
    max = min;
    if (peek() == ',') {
      ++pos_;
      skip_space(false);
      max = peek() == '}' ? -1 : parse_count();
      skip_space(false);
    }
    if (peek() != '}') fail("expected '}' to close '{m,n}'");
    ++pos_;
    if (max >= 0 && max < min) fail("repetition '{" + std::to_string(min) + "," + std::to_string(max) + "}' has max < min");
  }

  // One escaped or plain code point inside a literal or class (after the opening delimiter).
  uint32_t parse_char() {
    if (at_end()) fail("unexpected end of text");
    const char c = text_[pos_];
    if (c == '\\') {
      ++pos_;
      if (at_end()) fail("unexpected end of text after '\\'");
      const char e = text_[pos_++];
      switch (e) {
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case '\\': case '"': case '[': case ']': case '-': case '\'': case '^': return static_cast<uint8_t>(e);
        case 'x': return parse_hex(2);
        case 'u': return parse_hex(4);
        case 'U': return parse_hex(8);
        default: fail_at(pos_ - 2, std::string("unknown escape '\\") + e + "'");
      }
    }
    // A UTF-8 character of the text itself.
    uint32_t cp = 0;
    const size_t n = decode_utf8_at(text_, pos_, cp);
    if (n == 0) fail("invalid UTF-8 in the grammar text");
    pos_ += n;
    return cp;
  }

  uint32_t parse_hex(int digits) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int h = hex_digit_value(peek());
      if (h < 0) fail("expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(h);
      ++pos_;
    }
    if (v > 0x10FFFF) fail("code point above U+10FFFF");
    return v;
  }

  SymbolSequence parse_item(const std::string& rule) {
    const char c = peek();
    SymbolSequence seq;
    if (c == '"') {
      const size_t start = pos_;
      ++pos_;
      std::vector<uint8_t> bytes;
      while (peek() != '"') {
        if (at_end() || peek() == '\n') fail_at(start, "unterminated string literal");
        append_utf8(parse_char(), bytes);
      }
      ++pos_;
      for (uint8_t b : bytes) seq.push_back(builder_.byte(b));
      return seq;
    }
    if (c == '[') {
      const size_t start = pos_;
      ++pos_;
      bool negated = false;
      if (peek() == '^') {
        negated = true;
        ++pos_;
      }
      std::vector<std::pair<uint32_t, uint32_t>> ranges;
      while (peek() != ']') {
        if (at_end()) fail_at(start, "unterminated character class");
        const size_t at = pos_;
        const uint32_t lo = parse_char();
        uint32_t hi = lo;
        if (peek() == '-' && pos_ + 1 < text_.size() && text_[pos_ + 1] != ']') {
          ++pos_;
          hi = parse_char();
          if (hi < lo) fail_at(at, "character range is out of order");
        }
        ranges.emplace_back(lo, hi);
      }
      ++pos_;
      if (ranges.empty() && !negated) fail("empty character class");
      seq.push_back(builder_.char_class(ranges, negated, rule));
      return seq;
    }
    if (c == '.') {
      ++pos_;
      seq.push_back(builder_.char_class({}, true, rule));
      return seq;
    }
    if (c == '(') {
      ++pos_;
      skip_space(true);
      const auto alts = parse_alternatives(rule, true);
      if (peek() != ')') fail("expected ')'");
      ++pos_;
      if (alts.size() == 1) return alts[0];
      seq.push_back(builder_.group(alts, rule));
      return seq;
    }
    if (is_name_char(c)) {
      const size_t at = pos_;
      const std::string name = parse_name();
      if (first_use_.emplace(name, at).second) first_use_order_.emplace_back(at, name);
      seq.push_back(GrammarSymbol{true, builder_.rule(name)});
      return seq;
    }
    fail("unexpected '" + std::string(1, c) + "'");
  }

  std::string_view text_;
  size_t pos_ = 0;
  GrammarBuilder builder_;
  std::unordered_map<std::string, size_t> first_use_;
  std::vector<std::pair<size_t, std::string>> first_use_order_;  // for the earliest undefined name
};

}  // namespace

Grammar parse_gbnf(std::string_view text) { return GbnfParser(text).parse(); }

}  // namespace loom
