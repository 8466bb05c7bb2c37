// Template source -> tokens, with jinja2's whitespace rules as Hugging Face configures them:
// trim_blocks (the first newline after a block or comment tag is dropped), lstrip_blocks
// (spaces and tabs before a block or comment tag at the start of a line are dropped), `-` on a
// tag strips all whitespace on that side, `+` turns lstrip_blocks off for that tag, and one
// trailing newline of the source is dropped (keep_trailing_newline=False).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace loom::jinja {

enum class TokenKind {
  kText,        // template data between tags
  kExprBegin,   // {{
  kExprEnd,     // }}
  kStmtBegin,   // {%
  kStmtEnd,     // %}
  kName,
  kString,      // text holds the unescaped value
  kInteger,
  kFloat,
  kOperator,    // text holds it: + - * / // % ** ~ == != < > <= >= = . , : | ( ) [ ] { }
  kEnd,
};

struct Token {
  TokenKind kind = TokenKind::kEnd;
  std::string text;
  int line = 1;
  int64_t integer = 0;
  double number = 0.0;
};

// Throws loom::Error "<name>:<line>: ..." on an unterminated tag, comment or string, or a
// character no token starts with.
std::vector<Token> tokenize(std::string_view source, const std::string& name);

}  // namespace loom::jinja
