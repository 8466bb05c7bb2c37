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
    if (i > 0) text += "\n";  // as vLLM joins the text parts
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

}  // namespace

ChatRequest parse_chat_request(std::string_view body) {
  Json json = parse_json_object(body);
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
  out.tools = parse_tool_choice(json, body);
  out.body = std::move(json);
  return out;
}

}  // namespace loom
