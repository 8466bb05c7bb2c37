// Tool calls as a grammar: what a model may write when a request says it must call a tool
// (tool_choice "required" or a named function), or may call one whose arguments are strict.
// The calls are written in the model family's own syntax (the same text the tool-call parser
// reads), so a constrained answer parses exactly like a free one; each function's arguments
// follow its JSON Schema (compiled by json_schema_rules) or are any JSON object.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "core/grammar/json_schema_grammar.hpp"

namespace loom {

// How one family writes calls. Literals are written exactly; JSON whitespace (json-ws) may
// stand between every part.
struct ToolCallSyntax {
  std::string marker;         // text that opens the calls: "<tool_call>", "[TOOL_CALLS]", "<|python_tag|>"
  bool marker_optional = false;  // Llama 3 may write the JSON with no tag
  std::string list_open;      // around all calls: "[" ... "]" for Mistral
  std::string list_close;
  std::string call_close;     // after each call: "</tool_call>"
  std::string call_reopen;    // before each further call: "<tool_call>"
  std::string separator;      // between calls: "," (Mistral), ";" (Llama 3)
  std::string arguments_key;  // "arguments", or "parameters" (Llama 3)
};

struct ToolGrammarFunction {
  std::string name;
  JsonSchemaRules arguments;  // expression and rules of the arguments' schema
};

enum class ToolCallMode {
  kRequired,  // one call or more (one when !parallel), nothing else
  kOptional,  // text without the marker, then optionally the calls (tool_choice auto)
};

// The whole answer as GBNF (`root ::= ...`, with the json-* rules). Function rule names are
// made from their index, so any function name is safe.
std::string tool_call_grammar(const ToolCallSyntax& syntax, const std::vector<ToolGrammarFunction>& functions,
                              ToolCallMode mode, bool parallel);

// GBNF rules `<prefix>0 ::= ...` matching every text in which `marker` (ASCII, non-empty) does
// not occur: the states of a substring-search automaton, one rule each.
std::string text_without_rules(std::string_view marker, const std::string& prefix);

}  // namespace loom
