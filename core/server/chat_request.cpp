#include "core/server/chat_request.hpp"

#include "core/server/api_error.hpp"
#include "core/server/structured_output_request.hpp"
#include "core/server/request_fields.hpp"

namespace loom {
namespace {

std::string read_content(const Json& message, const std::string& field, bool may_be_null) {
  const auto it = message.find("content");
  if (it == message.end() || it->is_null()) {
    if (may_be_null) return "";
    throw bad_field(field + ".content", "'" + field + ".content' is required");
  }
  if (it->is_string()) return it->get<std::string>();
  if (!it->is_array()) {
    throw bad_field(field + ".content", "'" + field +
                                            ".content' must be a string or an array of text "
                                            "parts, got " +
                                            json_type_text(*it));
  }
  std::string text;
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& part = (*it)[i];
    const std::string name = field + ".content[" + std::to_string(i) + "]";
    if (!part.is_object()) {
      throw bad_field(name, "'" + name + "' must be an object, got " + json_type_text(part));
    }
    const auto type = read_string(part, "type", name + ".type");
    if (!type) throw bad_field(name + ".type", "'" + name + ".type' is required");
    if (*type != "text") {
      throw bad_field(name + ".type", "'" + name + ".type' is '" + *type +
                                          "'; only text content parts are supported");
    }
    const auto part_text = read_string(part, "text", name + ".text");
    if (!part_text) throw bad_field(name + ".text", "'" + name + ".text' is required");
    text += *part_text;
  }
  return text;
}

void read_tool_calls(const Json& message, const std::string& field) {
  const auto it = message.find("tool_calls");
  if (it == message.end() || it->is_null()) return;
  const std::string name = field + ".tool_calls";
  if (!it->is_array()) throw bad_field(name, "'" + name + "' must be an array, got " + json_type_text(*it));
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& call = (*it)[i];
    const std::string c = name + "[" + std::to_string(i) + "]";
    if (!call.is_object()) throw bad_field(c, "'" + c + "' must be an object, got " + json_type_text(call));
    if (!read_string(call, "id", c + ".id")) throw bad_field(c + ".id", "'" + c + ".id' is required");
    const auto type = read_string(call, "type", c + ".type");
    if (type && *type != "function") throw bad_field(c + ".type", "'" + c + ".type' must be \"function\"");
    const auto fn = call.find("function");
    if (fn == call.end() || !fn->is_object()) throw bad_field(c + ".function", "'" + c + ".function' must be an object");
    if (!read_string(*fn, "name", c + ".function.name"))
      throw bad_field(c + ".function.name", "'" + c + ".function.name' is required");
    const auto args = read_string(*fn, "arguments", c + ".function.arguments");
    if (!args) throw bad_field(c + ".function.arguments", "'" + c + ".function.arguments' is required");
    if (!Json::accept(*args)) {
      throw bad_field(c + ".function.arguments", "'" + c + ".function.arguments' is not valid JSON text");
    }
  }
}

ChatMessage read_message(const Json& message, size_t index) {
  const std::string field = "messages[" + std::to_string(index) + "]";
  if (!message.is_object()) {
    throw bad_field(field, "'" + field + "' must be an object, got " + json_type_text(message));
  }
  auto role = read_string(message, "role", field + ".role");
  if (!role) throw bad_field(field + ".role", "'" + field + ".role' is required");
  if (*role == "developer") role = "system";
  if (*role != "system" && *role != "user" && *role != "assistant" && *role != "tool") {
    throw bad_field(field + ".role", "'" + field + ".role' is '" + *role +
                                         "'; expected one of system, user, assistant, tool");
  }
  if (*role == "tool" && !read_string(message, "tool_call_id", field + ".tool_call_id")) {
    throw bad_field(field + ".tool_call_id", "'" + field + ".tool_call_id' is required in a tool message");
  }
  if (*role == "assistant") read_tool_calls(message, field);
  ChatMessage out;
  out.content = read_content(message, field, /*may_be_null=*/*role == "assistant");
  out.role = std::move(*role);
  return out;
}

void read_tools(const Json& body) {
  const auto it = body.find("tools");
  if (it == body.end() || it->is_null()) return;
  if (!it->is_array()) throw bad_field("tools", "'tools' must be an array, got " + json_type_text(*it));
  for (size_t i = 0; i < it->size(); ++i) {
    const Json& tool = (*it)[i];
    const std::string t = "tools[" + std::to_string(i) + "]";
    if (!tool.is_object()) throw bad_field(t, "'" + t + "' must be an object, got " + json_type_text(tool));
    const auto type = read_string(tool, "type", t + ".type");
    if (!type || *type != "function") throw bad_field(t + ".type", "'" + t + ".type' must be \"function\"");
    const auto fn = tool.find("function");
    if (fn == tool.end() || !fn->is_object()) throw bad_field(t + ".function", "'" + t + ".function' must be an object");
    const auto name = read_string(*fn, "name", t + ".function.name");
    if (!name || name->empty()) throw bad_field(t + ".function.name", "'" + t + ".function.name' is required");
    read_string(*fn, "description", t + ".function.description");
    if (const auto p = fn->find("parameters"); p != fn->end() && !p->is_null() && !p->is_object()) {
      throw bad_field(t + ".function.parameters", "'" + t + ".function.parameters' must be a JSON Schema object");
    }
    if (read_bool(*fn, "strict", t + ".function.strict").value_or(false)) {
      throw bad_field(t + ".function.strict", "'" + t + ".function.strict': true needs constrained decoding, " +
                                                  "which this server does not have yet");
    }
  }
}

// Where the grammar engine attaches: "required" and a named function are enforced by
// constraining the output to the tools' call syntax and schemas. Until then they are refused.
constexpr const char* kConstrainedToolChoiceHook = "needs constrained decoding, which this server does not have yet";

void read_tool_choice(const Json& body, ChatRequest& out) {
  const auto tools = body.find("tools");
  const bool has_tools = tools != body.end() && tools->is_array() && !tools->empty();
  std::string choice = has_tools ? "auto" : "none";
  if (const auto it = body.find("tool_choice"); it != body.end() && !it->is_null()) {
    if (it->is_object()) {
      throw bad_field("tool_choice", std::string("'tool_choice' naming a function ") + kConstrainedToolChoiceHook);
    }
    if (!it->is_string()) {
      throw bad_field("tool_choice", "'tool_choice' must be \"auto\", \"none\", \"required\" or an object, got " +
                                         json_type_text(*it));
    }
    choice = it->get<std::string>();
    if (choice == "required") {
      throw bad_field("tool_choice", std::string("'tool_choice': \"required\" ") + kConstrainedToolChoiceHook);
    }
    if (choice != "auto" && choice != "none") {
      throw bad_field("tool_choice", "'tool_choice' is '" + choice + "'; expected auto, none, required or an object");
    }
    if (choice == "auto" && !has_tools) throw bad_field("tool_choice", "'tool_choice' is auto but no 'tools' are given");
  }
  out.parse_tool_calls = has_tools && choice == "auto";
  out.parallel_tool_calls = read_bool(body, "parallel_tool_calls", "parallel_tool_calls").value_or(true);
}

}  // namespace

ChatRequest parse_chat_request(std::string_view body) {
  const Json json = parse_json_object(body);
  check_request_fields(json, RequestRoute::kChat);
  ChatRequest out;
  out.params = parse_generation_params(json, /*chat=*/true);
  out.params.sampling.grammar = parse_structured_output(json, body);
  const auto it = json.find("messages");
  if (it == json.end() || it->is_null()) throw bad_field("messages", "'messages' is required");
  if (!it->is_array()) {
    throw bad_field("messages", "'messages' must be an array, got " + json_type_text(*it));
  }
  if (it->empty()) throw bad_field("messages", "'messages' must not be empty");
  for (size_t i = 0; i < it->size(); ++i) out.messages.push_back(read_message((*it)[i], i));
  read_tools(json);
  read_tool_choice(json, out);
  return out;
}

}  // namespace loom
