#include "tools/bench/openai_chunk.hpp"

#include <nlohmann/json.hpp>

namespace loom::bench {
namespace {

using Json = nlohmann::json;

std::string string_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<int64_t> count_field(const Json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer()) return std::nullopt;
  return it->get<int64_t>();
}

std::string error_text(const Json& error) {
  if (error.is_string()) return error.get<std::string>();
  if (error.is_object() && error.contains("message") && error["message"].is_string()) {
    return error["message"].get<std::string>();
  }
  return error.dump();
}

}  // namespace

ChunkInfo classify_chunk(const SseEvent& event) {
  ChunkInfo info;
  if (event.data == "[DONE]") {
    info.done = true;
    return info;
  }
  const Json body = Json::parse(event.data, nullptr, /*allow_exceptions=*/false);
  if (body.is_discarded() || !body.is_object()) {
    info.error = "malformed stream chunk (not a JSON object): " + event.data.substr(0, 200);
    return info;
  }
  if (const auto it = body.find("error"); it != body.end() && !it->is_null()) {
    info.error = error_text(*it);
    return info;
  }
  if (event.event == "error") {
    info.error = event.data.substr(0, 200);
    return info;
  }
  if (const auto it = body.find("choices"); it != body.end() && it->is_array() && !it->empty()) {
    const Json& choice = it->front();
    if (choice.contains("text")) {
      info.text = string_field(choice, "text");
    } else if (const auto delta = choice.find("delta"); delta != choice.end() && delta->is_object()) {
      info.text = string_field(*delta, "content") + string_field(*delta, "reasoning_content");
    }
  }
  if (const auto it = body.find("usage"); it != body.end() && it->is_object()) {
    info.prompt_tokens = count_field(*it, "prompt_tokens");
    info.completion_tokens = count_field(*it, "completion_tokens");
  }
  return info;
}

}  // namespace loom::bench
