#include "core/template/jinja/lexer.hpp"

#include <algorithm>
#include <cstdlib>

#include "core/common/error.hpp"

namespace loom::jinja {
namespace {

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name) : src_(source), name_(name) {
    // keep_trailing_newline=False
    if (!src_.empty() && src_.back() == '\n') src_.remove_suffix(1);
  }

  std::vector<Token> run() {
    bool line_starting = true;  // the previous tag ended a line (or this is the start)
    while (pos_ < src_.size()) {
      size_t tag = find_tag(pos_);
      std::string text(src_.substr(pos_, tag - pos_));
      if (tag < src_.size()) {
        const char kind = src_[tag + 1];
        const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
        if (sign == '-') {
          while (!text.empty() && is_space(text.back())) text.pop_back();
        } else if (sign != '+' && kind != '{') {
          const size_t l = text.rfind('\n') == std::string::npos ? 0 : text.rfind('\n') + 1;
          if ((l > 0 || line_starting) && l < text.size() &&
              std::all_of(text.begin() + static_cast<long>(l), text.end(), is_space)) {
            text.resize(l);
          }
        }
      }
      if (!text.empty()) push(TokenKind::kText, text);
      line_ += static_cast<int>(std::count(src_.begin() + static_cast<long>(pos_),
                                           src_.begin() + static_cast<long>(tag), '\n'));
      pos_ = tag;
      if (pos_ >= src_.size()) break;
      const char kind = src_[pos_ + 1];
      pos_ += 2;
      if (pos_ < src_.size() && (src_[pos_] == '-' || src_[pos_] == '+')) ++pos_;
      bool strip_after = false;
      if (kind == '#') {
        const size_t end = src_.find("#}", pos_);
        if (end == std::string_view::npos) fail("unterminated comment");
        strip_after = end > pos_ && src_[end - 1] == '-';
        line_ += static_cast<int>(std::count(src_.begin() + static_cast<long>(pos_),
                                             src_.begin() + static_cast<long>(end), '\n'));
        pos_ = end + 2;
      } else {
        push(kind == '{' ? TokenKind::kExprBegin : TokenKind::kStmtBegin, "");
        strip_after = lex_tag(kind == '{' ? '}' : '%');
        push(kind == '{' ? TokenKind::kExprEnd : TokenKind::kStmtEnd, "");
      }
      line_starting = false;
      if (strip_after) {
        while (pos_ < src_.size() && is_space(src_[pos_])) {
          line_starting = src_[pos_] == '\n';
          if (src_[pos_] == '\n') ++line_;
          ++pos_;
        }
      } else if (kind != '{' && pos_ < src_.size() && src_[pos_] == '\n') {  // trim_blocks
        ++pos_;
        ++line_;
        line_starting = true;
      }
    }
    push(TokenKind::kEnd, "");
    return std::move(tokens_);
  }

 private:
  size_t find_tag(size_t from) const {
    for (size_t i = from; i + 1 < src_.size(); ++i) {
      if (src_[i] == '{' && (src_[i + 1] == '{' || src_[i + 1] == '%' || src_[i + 1] == '#')) return i;
    }
    return src_.size();
  }

  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ":" + std::to_string(line_) + ": " + what);
  }

  void push(TokenKind kind, std::string text) {
    Token t;
    t.kind = kind;
    t.text = std::move(text);
    t.line = line_;
    tokens_.push_back(std::move(t));
  }

  // Lexes the inside of {{ }} or {% %} up to its end; returns whether the end had '-'.
  bool lex_tag(char close) {
    int depth = 0;  // open brackets: "}}" inside a dict literal does not end the tag
    for (;;) {
      while (pos_ < src_.size() && is_space(src_[pos_])) {
        if (src_[pos_] == '\n') ++line_;
        ++pos_;
      }
      if (pos_ >= src_.size()) fail(close == '}' ? "unterminated '{{'" : "unterminated '{%'");
      const std::string_view rest = src_.substr(pos_);
      const std::string end = std::string(1, close) + "}";
      if (depth == 0 && rest.substr(0, 2) == end) {
        pos_ += 2;
        return false;
      }
      if (depth == 0 && rest.size() >= 3 && rest[0] == '-' && rest.substr(1, 2) == end) {
        pos_ += 3;
        return true;
      }
      const char c = rest[0];
      if (c == '"' || c == '\'') {
        lex_string(c);
      } else if (is_digit(c)) {
        lex_number();
      } else if (is_name_start(c)) {
        size_t n = 1;
        while (n < rest.size() && (is_name_start(rest[n]) || is_digit(rest[n]))) ++n;
        push(TokenKind::kName, std::string(rest.substr(0, n)));
        pos_ += n;
      } else {
        static const char* const kOps[] = {"//", "**", "==", "!=", "<=", ">=", "+", "-", "*", "/", "%",
                                           "~", "<", ">", "=", ".", ",", ":", "|", "(", ")", "[", "]",
                                           "{", "}"};
        bool found = false;
        for (const char* op : kOps) {
          const std::string_view o(op);
          if (rest.substr(0, o.size()) == o) {
            if (o == "(" || o == "[" || o == "{") ++depth;
            if (o == ")" || o == "]" || o == "}") --depth;
            push(TokenKind::kOperator, std::string(o));
            pos_ += o.size();
            found = true;
            break;
          }
        }
        if (!found) fail(std::string("unexpected character '") + c + "'");
      }
    }
  }

  void lex_string(char quote) {
    std::string value;
    size_t i = pos_ + 1;
    for (;;) {
      if (i >= src_.size()) fail("unterminated string");
      const char c = src_[i];
      if (c == quote) break;
      if (c == '\n') ++line_;
      if (c != '\\' || i + 1 >= src_.size()) {
        value += c;
        ++i;
        continue;
      }
      const char e = src_[i + 1];
      i += 2;
      switch (e) {
        case 'n': value += '\n'; break;
        case 't': value += '\t'; break;
        case 'r': value += '\r'; break;
        case '0': value += '\0'; break;
        case '\\': value += '\\'; break;
        case '\'': value += '\''; break;
        case '"': value += '"'; break;
        case 'x':
        case 'u': {
          const size_t n = e == 'x' ? 2 : 4;
          if (i + n > src_.size()) fail("bad escape in string");
          const auto cp = static_cast<uint32_t>(std::strtoul(std::string(src_.substr(i, n)).c_str(), nullptr, 16));
          i += n;
          append_utf8(value, cp);
          break;
        }
        default: value += '\\'; value += e; break;  // Python keeps unknown escapes
      }
    }
    push(TokenKind::kString, value);
    pos_ = i + 1;
  }

  static void append_utf8(std::string& out, uint32_t cp) {
    if (cp < 0x80) {
      out += static_cast<char>(cp);
    } else if (cp < 0x800) {
      out += static_cast<char>(0xC0 | (cp >> 6));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
      out += static_cast<char>(0xE0 | (cp >> 12));
      out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (cp & 0x3F));
    }
  }

  void lex_number() {
    size_t n = 0;
    const std::string_view rest = src_.substr(pos_);
    while (n < rest.size() && (is_digit(rest[n]) || rest[n] == '_')) ++n;
    bool is_float = false;
    if (n + 1 < rest.size() && rest[n] == '.' && is_digit(rest[n + 1])) {
      is_float = true;
      ++n;
      while (n < rest.size() && is_digit(rest[n])) ++n;
    }
    if (n < rest.size() && (rest[n] == 'e' || rest[n] == 'E')) {
      size_t m = n + 1;
      if (m < rest.size() && (rest[m] == '+' || rest[m] == '-')) ++m;
      if (m < rest.size() && is_digit(rest[m])) {
        is_float = true;
        n = m;
        while (n < rest.size() && is_digit(rest[n])) ++n;
      }
    }
    std::string text(rest.substr(0, n));
    text.erase(std::remove(text.begin(), text.end(), '_'), text.end());
    Token t;
    t.kind = is_float ? TokenKind::kFloat : TokenKind::kInteger;
    t.text = text;
    t.line = line_;
    if (is_float) t.number = std::strtod(text.c_str(), nullptr);
    else t.integer = std::strtoll(text.c_str(), nullptr, 10);
    tokens_.push_back(std::move(t));
    pos_ += n;
  }

  std::string_view src_;
  const std::string& name_;
  size_t pos_ = 0;
  int line_ = 1;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& name) {
  return Lexer(source, name).run();
}

}  // namespace loom::jinja
