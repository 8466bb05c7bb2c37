#include "core/server/tool_choice.hpp"

#include "core/common/error.hpp"
#include "core/grammar/gbnf_parser.hpp"
#include "core/grammar/json_schema_grammar.hpp"
#include "core/grammar/tool_call_grammar.hpp"
#include "core/server/api_error.hpp"

namespace loom {
namespace {

std::vector<ToolSpec> read_tools(const Json& body, std::string_view raw_body) {
  std::vector<ToolSpec> out;
  const auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return out;
  if (!it->is_array()) throw bad_field("tools", "'tools' must be an array, got " + json_type_text(*it));
  std::optional<OJson> ordered;  // the tools with their key order, read only when a schema is given
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& tool = (*it)[i];
    const std::string t = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) throw bad_field(t, "'" + t + "' must be an object, got " + json_type_text(tool));
    const auto type = read_string(tool, "type", t + ".type");
    if (!type || *type != "function") throw bad_field(t + ".type", "'" + t + ".type' must be \"function\"");
    const auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) throw bad_field(t + ".function", "'" + t + ".function' must be an object");
    ToolSpec spec;
    const auto name = read_string(*fn, "name", t + ".function.name");
    if (!name || name->empty()) throw bad_field(t + ".function.name", "'" + t + ".function.name' is required");
    for (const ToolSpec& seen : out) {
      if (seen.name == *name) throw bad_field(t + ".function.name", "'" + t + ".function.name' '" + *name + "' is given twice");
    }
    spec.name = *name;
    read_string(*fn, "description", t + ".function.description");
    if (const auto p = fn->find("parameters"); p != fn->end() && !p->is_null()) {
      if (!p->is_object()) {
        throw bad_field(t + ".function.parameters", "'" + t + ".function.parameters' must be a JSON Schema object");
      }
      if (!ordered) ordered = OJson::parse(raw_body).at("tools");
      spec.parameters = (*ordered)[i].at("function").at("parameters");
    }
    spec.strict = read_bool(*fn, "strict", t + ".function.strict").value_or(false);
    out.push_back(std::move(spec));
  }
  return out;
}

void read_choice(const Json& body, ToolChoice& out) {
  const bool has_tools = !out.tools.empty();
  out.mode = has_tools ? ToolChoice::Mode::kAuto : ToolChoice::Mode::kNone;
  const auto it = body.find("tool_choice");
  if (it == body.end() || it->is_null()) return;
  if (it->is_object()) {
    const auto type = read_string(*it, "type", "tool_choice.type");
    if (!type || *type != "function") throw bad_field("tool_choice.type", "'tool_choice.type' must be \"function\"");
    const auto fn = it->find("function");
    if (fn == it->end() || !fn->is_object()) {
      throw bad_field("tool_choice.function", "'tool_choice.function' must be an object with a 'name'");
    }
    const auto name = read_string(*fn, "name", "tool_choice.function.name");
    if (!name) throw bad_field("tool_choice.function.name", "'tool_choice.function.name' is required");
    bool known = false;
    for (const ToolSpec& t : out.tools) known = known || t.name == *name;
    if (!known) {
      throw bad_field("tool_choice.function.name", "'tool_choice.function.name' '" + *name + "' is not one of 'tools'");
    }
    out.mode = ToolChoice::Mode::kNamed;
    out.function = *name;
    return;
  }
  if (!it->is_string()) {
    throw bad_field("tool_choice",
                    "'tool_choice' must be \"auto\", \"none\", \"required\" or an object, got " + json_type_text(*it));
  }
  const std::string choice = it->get<std::string>();
  if (choice == "none") {
    out.mode = ToolChoice::Mode::kNone;
  } else if (choice == "auto" || choice == "required") {
    if (!has_tools) throw bad_field("tool_choice", "'tool_choice' is " + choice + " but no 'tools' are given");
    out.mode = choice == "auto" ? ToolChoice::Mode::kAuto : ToolChoice::Mode::kRequired;
  } else {
    throw bad_field("tool_choice", "'tool_choice' is '" + choice + "'; expected auto, none, required or an object");
  }
}

ToolCallSyntax syntax_of(ToolCallFormat format) {
  ToolCallSyntax s;
  switch (format) {
    case ToolCallFormat::kHermes:
      s.marker = "<tool_call>";
      s.call_close = "</tool_call>";
      s.call_reopen = "<tool_call>";
      s.arguments_key = "arguments";
      break;
    case ToolCallFormat::kLlama3Json:
      s.marker = "<|python_tag|>";
      s.marker_optional = true;
      s.separator = ";";
      s.arguments_key = "parameters";
      break;
    case ToolCallFormat::kMistral:
      s.marker = "[TOOL_CALLS]";
      s.list_open = "[";
      s.list_close = "]";
      s.separator = ",";
      s.arguments_key = "arguments";
      break;
    case ToolCallFormat::kNone:
      throw Error("tool_choice_grammar: no tool-call format");
  }
  return s;
}

// The tool's arguments as grammar rules named after its index.
JsonSchemaRules arguments_rules(const ToolSpec& tool, size_t index) {
  const std::string prefix = "tc" + std::to_string(index) + "-";
  if (!tool.parameters) return {"json-object", ""};
  try {
    return json_schema_rules(*tool.parameters, prefix);
  } catch (const Error& e) {
    if (!tool.strict) return {"json-object", ""};
    const std::string field = "tools[" + std::to_string(index) + "].function.parameters";
    throw bad_field(field, "'" + field + "' cannot be enforced with strict: true: " + e.what());
  }
}

}  // namespace

ToolChoice parse_tool_choice(const Json& body, std::string_view raw_body) {
  ToolChoice out;
  out.tools = read_tools(body, raw_body);
  read_choice(body, out);
  out.parallel = read_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
  return out;
}

std::shared_ptr<const Grammar> tool_choice_grammar(const ToolChoice& choice, ToolCallFormat format) {
  if (!choice.parses_calls()) return nullptr;
  bool any_strict = false;
  for (const ToolSpec& t : choice.tools) any_strict = any_strict || t.strict;
  if (choice.mode == ToolChoice::Mode::kAuto && !any_strict) return nullptr;
  std::vector<ToolGrammarFunction> functions;
  for (size_t i = 0; i < choice.tools.size(); ++i) {
    const ToolSpec& t = choice.tools[i];
    if (choice.mode == ToolChoice::Mode::kNamed && t.name != choice.function) continue;
    // Under auto only strict tools are constrained; the others may be called with any object.
    const bool constrain = choice.mode != ToolChoice::Mode::kAuto || t.strict;
    functions.push_back({t.name, constrain ? arguments_rules(t, i) : JsonSchemaRules{"json-object", ""}});
  }
  const ToolCallMode mode = choice.mode == ToolChoice::Mode::kAuto ? ToolCallMode::kOptional : ToolCallMode::kRequired;
  // A named function is called once, as OpenAI does.
  const bool parallel = choice.parallel && choice.mode != ToolChoice::Mode::kNamed;
  return std::make_shared<const Grammar>(parse_gbnf(tool_call_grammar(syntax_of(format), functions, mode, parallel)));
}

}  // namespace loom
