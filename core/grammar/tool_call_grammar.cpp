#include "core/grammar/tool_call_grammar.hpp"

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/grammar/gbnf_text.hpp"

namespace loom {
namespace {

// \xHH: safe inside a character class whatever the character.
std::string hex_escape(char c) {
  static const char kDigits[] = "0123456789ABCDEF";
  const auto b = static_cast<unsigned char>(c);
  return std::string("\\x") + kDigits[b >> 4] + kDigits[b & 15];
}

}  // namespace

std::string text_without_rules(std::string_view marker, const std::string& prefix) {
  if (marker.empty()) throw Error("text_without_rules: empty marker");
  for (const char c : marker) {
    if (static_cast<unsigned char>(c) >= 0x80) throw Error("text_without_rules: the marker must be ASCII");
  }
  // Knuth-Morris-Pratt failure links: state i = the longest marker prefix the text ends in.
  const size_t m = marker.size();
  std::vector<size_t> fail(m + 1, 0);
  for (size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && marker[i] != marker[k]) k = fail[k];
    if (marker[i] == marker[k]) ++k;
    fail[i + 1] = k;
  }
  auto next = [&](size_t state, char c) {
    while (state > 0 && (state == m || marker[state] != c)) state = fail[state];
    return marker[state] == c ? state + 1 : 0;
  };
  std::string distinct;
  for (const char c : marker) {
    if (distinct.find(c) == std::string::npos) distinct += c;
  }
  std::string others = "[^";
  for (const char c : distinct) others += hex_escape(c);
  others += "]";
  std::string out;
  for (size_t state = 0; state < m; ++state) {
    out += prefix + std::to_string(state) + " ::= \"\" | " + others + " " + prefix + "0";
    for (const char c : distinct) {
      const size_t to = next(state, c);
      if (to == m) continue;  // the marker would be complete: not allowed
      out += " | " + gbnf_literal(std::string(1, c)) + " " + prefix + std::to_string(to);
    }
    out += "\n";
  }
  return out;
}

std::string tool_call_grammar(const ToolCallSyntax& syntax, const std::vector<ToolGrammarFunction>& functions,
                              ToolCallMode mode, bool parallel) {
  if (functions.empty()) throw Error("tool_call_grammar: no functions");
  // A literal and the whitespace after it; calls end on their last literal, so an answer that is
  // only calls carries no stray whitespace into `content`.
  const auto lit = [](const std::string& s) { return s.empty() ? std::string() : gbnf_literal(s) + " json-ws "; };
  const auto last = [](const std::string& s) { return s.empty() ? std::string() : " json-ws " + gbnf_literal(s); };
  std::string out;
  std::string call = "tc-call ::= (";
  for (size_t i = 0; i < functions.size(); ++i) {
    const ToolGrammarFunction& f = functions[i];
    const std::string name = "tc-fn" + std::to_string(i);
    call += (i ? " | " : "") + name;
    out += name + " ::= \"{\" json-ws " + gbnf_literal("\"name\"") + " json-ws \":\" json-ws " +
           gbnf_literal(nlohmann::json(f.name).dump()) + " json-ws \",\" json-ws " +
           gbnf_literal(nlohmann::json(syntax.arguments_key).dump()) + " json-ws \":\" json-ws " +
           f.arguments.expression + " json-ws \"}\"\n" + f.arguments.rules;
  }
  out += call + ")" + last(syntax.call_close) + "\n";
  const std::string further =
      parallel ? " (json-ws " + lit(syntax.separator) + lit(syntax.call_reopen) + "tc-call)*" : "";
  const std::string marker = syntax.marker_optional ? "(" + lit(syntax.marker) + ")? " : lit(syntax.marker);
  out += "tc-calls ::= " + marker + lit(syntax.list_open) + "tc-call" + further + last(syntax.list_close) + "\n";
  if (mode == ToolCallMode::kRequired) {
    out = "root ::= tc-calls\n" + out;
  } else if (syntax.marker_optional) {
    // Llama 3 decides at the first text: JSON or the tag is a call, anything else is content
    // (the parser reads no calls after text), so plain text may not start like a call.
    out = "root ::= json-ws (tc-calls | tc-plain)\n" + out + "tc-plain ::= (([^{<\\x09\\x0A\\x0D\\x20] | \"<\" [^|]) .*)?\n";
  } else {
    out = "root ::= tc-text0 tc-calls?\n" + out + text_without_rules(syntax.marker, "tc-text");
  }
  return out + json_base_rules();
}

}  // namespace loom
