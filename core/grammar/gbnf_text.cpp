#include "core/grammar/gbnf_text.hpp"

#include <cstdio>

#include "core/common/error.hpp"

namespace loom {
namespace {

void append_code_point(uint32_t cp, std::string& out) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "\\U%08X", cp);
  out += buf;
}

}  // namespace

std::string gbnf_literal(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    const auto b = static_cast<uint8_t>(c);
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (b < 0x20 || b == 0x7F) {
      char buf[8];
      std::snprintf(buf, sizeof(buf), "\\x%02X", b);
      out += buf;
    } else {
      out += c;  // UTF-8 passes through: the parser reads the text as UTF-8
    }
  }
  return out + "\"";
}

std::string gbnf_class(const std::vector<std::pair<uint32_t, uint32_t>>& ranges) {
  std::string out = "[";
  for (const auto& [lo, hi] : ranges) {
    append_code_point(lo, out);
    if (hi != lo) {
      out += '-';
      append_code_point(hi, out);
    }
  }
  return out + "]";
}

std::string choice_grammar(const std::vector<std::string>& choices) {
  LOOM_CHECK(!choices.empty(), "the choice list is empty");
  std::string out = "root ::= ";
  for (size_t i = 0; i < choices.size(); ++i) {
    if (i) out += " | ";
    out += choices[i].empty() ? "\"\"" : gbnf_literal(choices[i]);
  }
  return out + "\n";
}

}  // namespace loom
