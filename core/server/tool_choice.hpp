// `tools` and `tool_choice` of /v1/chat/completions, read on the HTTP thread, and the grammar
// that enforces them once the model's tool-call family is known:
//   auto      the model may answer or call; tools with `strict: true` have their arguments
//             constrained to their schema (so the text before a call may not contain the
//             family's call marker, and a call that starts must be valid)
//   required  the answer is one or more calls (one when parallel_tool_calls is false) of any
//             tool, arguments following each tool's schema
//   {type: "function", function: {name}}  one call of that function
//   none      tools are rendered by the template, nothing is parsed or constrained
// Under required and a named function every tool's arguments follow its schema when the schema
// compiles; a non-strict tool whose schema uses a keyword the grammar cannot express gets any
// JSON object instead, a strict one is a 400 naming the keyword.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/server/json_fields.hpp"
#include "core/server/tool_call_parser.hpp"

namespace loom {

struct Grammar;
using OJson = nlohmann::ordered_json;

struct ToolSpec {
  std::string name;
  std::optional<OJson> parameters;  // the JSON Schema with its key order; nullopt: any object
  bool strict = false;
};

struct ToolChoice {
  enum class Mode { kNone, kAuto, kRequired, kNamed };
  Mode mode = Mode::kNone;
  std::string function;  // kNamed: the function's name (one of tools)
  std::vector<ToolSpec> tools;
  bool parallel = true;  // parallel_tool_calls

  bool parses_calls() const { return mode != Mode::kNone && !tools.empty(); }
};

// Validates tools, tool_choice and parallel_tool_calls (400s naming the field). `raw_body` is
// the text `body` was parsed from, re-read for the schemas' key order.
ToolChoice parse_tool_choice(const Json& body, std::string_view raw_body);

// The constraint for `choice` in `format`; nullptr when there is none (none, or auto with no
// strict tool). Throws a 400 naming the tool when a strict tool's schema cannot be compiled.
std::shared_ptr<const Grammar> tool_choice_grammar(const ToolChoice& choice, ToolCallFormat format);

}  // namespace loom
