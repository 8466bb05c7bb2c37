#include "core/grammar/regex_grammar.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/common/error.hpp"
#include "core/grammar/gbnf_text.hpp"
#include "core/grammar/grammar.hpp"
#include "core/grammar/utf8_ranges.hpp"

namespace loom {
namespace {

using Ranges = std::vector<std::pair<uint32_t, uint32_t>>;

const Ranges kDigit = {{'0', '9'}};
const Ranges kWord = {{'0', '9'}, {'A', 'Z'}, {'_', '_'}, {'a', 'z'}};
const Ranges kSpace = {{'\t', '\r'}, {' ', ' '}};

class RegexCompiler {
 public:
  RegexCompiler(std::string_view re, const RegexOptions& options) : re_(re), opt_(options) {}

  std::string compile() {
    bool start_anchor = false;
    if (peek() == '^') {
      start_anchor = true;
      ++pos_;
    }
    const std::string body = parse_alternation().text;
    if (!at_end()) fail(peek() == ')' ? "unbalanced ')'" : "unexpected character");
    const std::string any = opt_.json_string ? json_char() : "[^\\U0000000A]";
    std::string out;
    if (opt_.unanchored && !start_anchor) out += any + "* ";
    out += "(" + body + ")";
    if (opt_.unanchored && !end_anchor_) out += " " + any + "*";
    return out;
  }

 private:
  [[noreturn]] void fail_at(size_t at, const std::string& what) const {
    throw Error("regex offset " + std::to_string(at) + ": " + what);
  }
  [[noreturn]] void fail(const std::string& what) const { fail_at(pos_, what); }
  bool at_end() const { return pos_ >= re_.size(); }
  char peek() const { return at_end() ? '\0' : re_[pos_]; }

  // One character of a JSON string's content (an escape counts as one).
  static std::string json_char() {
    return "([^\"\\\\\\x00-\\x1F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}))";
  }

  // A parsed piece: its GBNF text, whether it matches "", and (for a nullable piece) its parts,
  // which unbounded repetition needs (see star_base).
  struct Piece {
    enum Kind { kAtom, kAlternation, kConcat, kRepeat } kind = kAtom;
    std::string text;
    bool nullable = false;
    int64_t max = -1;  // kRepeat: the upper bound, -1 for none
    std::vector<Piece> parts;
  };

  Piece parse_alternation() {
    Piece alt{Piece::kAlternation, "", false, -1, {}};
    alt.parts.push_back(parse_concat());
    while (peek() == '|') {
      ++pos_;
      alt.parts.push_back(parse_concat());
    }
    if (alt.parts.size() == 1) return std::move(alt.parts.front());
    for (const Piece& b : alt.parts) {
      alt.text += (alt.text.empty() ? "" : " | ") + b.text;
      alt.nullable = alt.nullable || b.nullable;
    }
    return alt;
  }

  Piece parse_concat() {
    Piece cat{Piece::kConcat, "", true, -1, {}};
    while (!at_end() && peek() != '|' && peek() != ')') {
      if (peek() == '$') {
        if (pos_ + 1 != re_.size()) fail("'$' is only supported at the end of the regex");
        end_anchor_ = true;
        ++pos_;
        break;
      }
      const size_t at = pos_;
      Piece atom = parse_atom();
      Piece item = quantified(std::move(atom), at);
      cat.text += (cat.text.empty() ? "" : " ") + item.text;
      cat.nullable = cat.nullable && item.nullable;
      cat.parts.push_back(std::move(item));
    }
    if (cat.parts.size() == 1) return std::move(cat.parts.front());
    if (cat.text.empty()) cat.text = "\"\"";
    return cat;
  }

  // The atom under its quantifier, if one follows.
  Piece quantified(Piece atom, size_t at) {
    int64_t min = 1, max = 1;
    const std::string quant = parse_quantifier(at, min, max);
    if (quant.empty()) return atom;
    std::vector<std::string> base;
    star_base(atom, base);
    // An atom that matches only "" (e.g. "()", "(|)") repeated is still only ""; GBNF has
    // nothing to repeat there, so the quantifier is dropped.
    if (base.empty()) return atom;
    Piece rep{Piece::kRepeat, "", min == 0 || atom.nullable, max, {}};
    if (atom.nullable && max < 0) {
      // GBNF's x* of a nullable x is left recursive (x* ::= x x* | "" begins with itself), so
      // the repetition is written over the atom's non-empty forms, the same language.
      std::string alts;
      for (const std::string& b : base) alts += (alts.empty() ? "" : " | ") + b;
      rep.text = "(" + alts + ")*";
    } else {
      rep.text = "(" + atom.text + ")" + quant;
    }
    rep.parts.push_back(std::move(atom));
    return rep;
  }

  // Non-nullable expressions B1..Bk with (B1 | ... | Bk)* == p*. A non-nullable piece is its own
  // base. For a nullable one: every branch of an alternation, and every item of a concatenation
  // (each matches "", so (X1 X2 ... Xn)* == (X1 | X2 | ... | Xn)*), each in turn reduced; a
  // repetition with an upper bound of at least one repeats its atom's base. Empty: p matches
  // only "".
  static void star_base(const Piece& p, std::vector<std::string>& out) {
    if (!p.nullable) {
      out.push_back("(" + p.text + ")");
      return;
    }
    if (p.kind == Piece::kRepeat && p.max == 0) return;
    for (const Piece& part : p.parts) star_base(part, out);
  }

  std::string parse_quantifier(size_t atom_at, int64_t& min, int64_t& max) {
    std::string q;
    const char c = peek();
    if (c == '*' || c == '+' || c == '?') {
      q = std::string(1, c);
      min = c == '+' ? 1 : 0;
      max = c == '?' ? 1 : -1;
      ++pos_;
    } else if (c == '{' && is_bounds()) {
      const size_t start = pos_;
      while (peek() != '}') ++pos_;
      ++pos_;
      q = std::string(re_.substr(start, pos_ - start));
      check_bounds(start, q, min, max);
    } else {
      return q;
    }
    if (peek() == '?') ++pos_;  // lazy: the same language
    if (peek() == '+') fail("possessive quantifiers are not supported");
    if (peek() == '*' || peek() == '{') fail_at(atom_at, "nothing to repeat");
    return q;
  }

  // The bounds go to GBNF as written, so they are refused here as Python's re does (and past the
  // grammar's repetition cap), naming the regex offset, not as a GBNF error about text the
  // client never wrote.
  void check_bounds(size_t at, const std::string& q, int64_t& min, int64_t& max) const {
    const size_t comma = q.find(',');
    const auto count = [&](std::string_view digits) {
      int64_t v = 0;
      for (char d : digits) {
        v = v * 10 + (d - '0');
        if (v > kMaxRepetition) fail_at(at, "repetition count above " + std::to_string(kMaxRepetition));
      }
      return v;
    };
    min = count(std::string_view(q).substr(1, std::min(comma, q.size() - 1) - 1));
    max = comma == std::string::npos ? min : -1;
    if (comma == std::string::npos || comma + 2 == q.size()) return;  // {m} or {m,}
    max = count(std::string_view(q).substr(comma + 1, q.size() - comma - 2));
    if (max < min) fail_at(at, "min repeat greater than max repeat in '" + q + "'");
  }

  // {m}, {m,}, {m,n}; anything else after '{' is a literal '{' as in Python.
  bool is_bounds() const {
    size_t p = pos_ + 1;
    size_t digits = 0;
    while (p < re_.size() && re_[p] >= '0' && re_[p] <= '9') ++p, ++digits;
    if (digits == 0) return false;
    if (p < re_.size() && re_[p] == ',') {
      ++p;
      while (p < re_.size() && re_[p] >= '0' && re_[p] <= '9') ++p;
    }
    return p < re_.size() && re_[p] == '}';
  }

  static Piece atom(std::string text) { return Piece{Piece::kAtom, std::move(text), false, -1, {}}; }

  Piece parse_atom() {
    const size_t at = pos_;
    const char c = peek();
    switch (c) {
      case '(': return parse_group();
      case '[': return atom(class_text(parse_class()));
      case '.': {
        ++pos_;
        return atom(class_text(normalize_code_ranges({{'\n', '\n'}}, true)));
      }
      case '^': fail("'^' is only supported at the start of the regex");
      case '*': case '+': case '?': fail("nothing to repeat");
      case '\\': {
        ++pos_;
        Ranges set;
        if (parse_shorthand(set, /*in_class=*/false)) return atom(class_text(normalize_code_ranges(set, false)));
        pos_ = at + 1;
        return atom(literal(parse_escape()));
      }
      default: return atom(literal(next_code_point()));
    }
  }

  Piece parse_group() {
    const size_t at = pos_;
    ++pos_;
    if (peek() == '?') {
      ++pos_;
      const char k = peek();
      if (k == ':') {
        ++pos_;
      } else if (k == 'P' && pos_ + 1 < re_.size() && re_[pos_ + 1] == '<') {
        pos_ += 2;
        skip_group_name(at);
      } else if (k == '<' && pos_ + 1 < re_.size() && re_[pos_ + 1] != '=' && re_[pos_ + 1] != '!') {
        ++pos_;
        skip_group_name(at);
      } else if (k == '=' || k == '!') {
        fail_at(at, std::string("lookahead '(?") + k + "' is not supported");
      } else if (k == '<') {
        fail_at(at, std::string("lookbehind '(?<") + re_[pos_ + 1] + "' is not supported");
      } else if (k == 'P' && pos_ + 1 < re_.size() && re_[pos_ + 1] == '=') {
        fail_at(at, "backreference '(?P=' is not supported");
      } else {
        fail_at(at, "inline flags or group extensions '(?" + std::string(1, k) + "' are not supported");
      }
    }
    Piece inner = parse_alternation();
    if (peek() != ')') fail_at(at, "unbalanced '('");
    ++pos_;
    inner.text = "(" + inner.text + ")";
    return inner;
  }

  void skip_group_name(size_t at) {
    while (!at_end() && peek() != '>') ++pos_;
    if (at_end()) fail_at(at, "unterminated group name");
    ++pos_;
  }

  // \d \w \s \D \W \S into `set` (negated ones only outside classes). False when not one.
  bool parse_shorthand(Ranges& set, bool in_class) {
    const char e = peek();
    const Ranges* base = e == 'd' || e == 'D' ? &kDigit : e == 'w' || e == 'W' ? &kWord : e == 's' || e == 'S' ? &kSpace : nullptr;
    if (!base) return false;
    const bool negated = e == 'D' || e == 'W' || e == 'S';
    if (negated && in_class) fail(std::string("'\\") + e + "' inside a class is not supported");
    ++pos_;
    const Ranges r = negated ? normalize_code_ranges(*base, true) : *base;
    set.insert(set.end(), r.begin(), r.end());
    return true;
  }

  // After the backslash: one code point.
  uint32_t parse_escape() {
    const size_t at = pos_ - 1;
    if (at_end()) fail("trailing '\\'");
    const char e = re_[pos_++];
    switch (e) {
      case 'n': return '\n';
      case 't': return '\t';
      case 'r': return '\r';
      case 'f': return '\f';
      case 'v': return '\v';
      case '0': return 0;
      case 'x': return parse_hex(2, at);
      case 'u': return parse_utf16_escape(at);
      case 'b': case 'B': fail_at(at, std::string("word boundary '\\") + e + "' is not supported");
      case 'A': case 'Z': case 'z': case 'G': fail_at(at, std::string("anchor '\\") + e + "' is not supported");
      default: break;
    }
    if (e >= '1' && e <= '9') fail_at(at, std::string("backreference '\\") + e + "' is not supported");
    if ((e >= 'a' && e <= 'z') || (e >= 'A' && e <= 'Z')) fail_at(at, std::string("unknown escape '\\") + e + "'");
    pos_ -= 1;
    return next_code_point();
  }

  // After \u: four hex digits. A high surrogate followed by \u and a low one is the pair's
  // code point (as JSON and ECMAScript write characters past U+FFFF); a lone surrogate is not a
  // character UTF-8 text can hold, so it is refused rather than compiled to bytes no output has.
  uint32_t parse_utf16_escape(size_t at) {
    const uint32_t unit = parse_hex(4, at);
    if (unit < 0xD800 || unit > 0xDFFF) return unit;
    if (unit <= 0xDBFF && re_.substr(pos_, 2) == "\\u") {
      const size_t save = pos_;
      pos_ += 2;
      const uint32_t low = parse_hex(4, save);
      if (low >= 0xDC00 && low <= 0xDFFF) return 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
    }
    fail_at(at, "a lone surrogate escape is not a character");
  }

  uint32_t parse_hex(int digits, size_t at) {
    uint32_t v = 0;
    for (int i = 0; i < digits; ++i) {
      const int d = hex_digit_value(peek());
      if (d < 0) fail_at(at, "expected " + std::to_string(digits) + " hex digits");
      v = v * 16 + static_cast<uint32_t>(d);
      ++pos_;
    }
    return v;
  }

  uint32_t next_code_point() {
    uint32_t cp = 0;
    const size_t n = decode_utf8_at(re_, pos_, cp);
    if (n == 0) fail("invalid UTF-8");
    pos_ += n;
    return cp;
  }

  Ranges parse_class() {
    const size_t at = pos_;
    ++pos_;
    bool negated = false;
    if (peek() == '^') {
      negated = true;
      ++pos_;
    }
    Ranges set;
    bool first = true;
    while (at_end() || peek() != ']' || first) {
      if (at_end()) fail_at(at, "unterminated character class");
      first = false;
      uint32_t lo;
      if (peek() == '\\') {
        ++pos_;
        if (parse_shorthand(set, true)) continue;
        lo = parse_escape();
      } else {
        lo = next_code_point();
      }
      uint32_t hi = lo;
      if (peek() == '-' && pos_ + 1 < re_.size() && re_[pos_ + 1] != ']') {
        ++pos_;
        if (peek() == '\\') {
          ++pos_;
          hi = parse_escape();
        } else {
          hi = next_code_point();
        }
        if (hi < lo) fail_at(at, "character range is out of order");
      }
      set.emplace_back(lo, hi);
    }
    ++pos_;
    return normalize_code_ranges(set, negated);
  }

  // A class in the output; in a JSON string, without the characters JSON must escape.
  std::string class_text(Ranges set) const {
    if (opt_.json_string) {
      Ranges forbidden = {{0, 0x1F}, {'"', '"'}, {'\\', '\\'}};
      Ranges allowed = normalize_code_ranges(forbidden, true);
      Ranges out;
      for (const auto& a : set) {
        for (const auto& b : allowed) {
          const uint32_t lo = std::max(a.first, b.first), hi = std::min(a.second, b.second);
          if (lo <= hi) out.emplace_back(lo, hi);
        }
      }
      set = std::move(out);
    }
    if (set.empty()) throw Error("regex: a character class matches nothing (that a JSON string can hold unescaped)");
    return gbnf_class(set);
  }

  std::string literal(uint32_t cp) const {
    std::vector<uint8_t> bytes;
    if (opt_.json_string && (cp == '"' || cp == '\\' || cp < 0x20)) {
      static const char* kShort[] = {"b", "t", "n", nullptr, "f", "r"};
      std::string esc = "\\";
      if (cp == '"' || cp == '\\') {
        esc += static_cast<char>(cp);
      } else if (cp >= 8 && cp <= 13 && kShort[cp - 8]) {
        esc += kShort[cp - 8];
      } else {
        char buf[8];
        std::snprintf(buf, sizeof(buf), "u%04x", cp);
        esc += buf;
      }
      return gbnf_literal(esc);
    }
    append_utf8(cp, bytes);
    return gbnf_literal(std::string(bytes.begin(), bytes.end()));
  }

  std::string_view re_;
  RegexOptions opt_;
  size_t pos_ = 0;
  bool end_anchor_ = false;
};

}  // namespace

std::string regex_to_gbnf_expression(std::string_view regex, const RegexOptions& options) {
  return RegexCompiler(regex, options).compile();
}

std::string regex_grammar(std::string_view regex) {
  return "root ::= " + regex_to_gbnf_expression(regex) + "\n";
}

}  // namespace loom
