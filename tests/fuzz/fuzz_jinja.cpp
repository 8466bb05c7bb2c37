// The Jinja engine behind chat templates: an arbitrary template source (a model file's
// tokenizer.chat_template) parsed, then rendered with arbitrary messages. Input: template text,
// a NUL byte, then the messages as JSON (a fixed conversation when absent or not an array).
// A loom::Error (parse error, raise_exception, a failed render naming its line) is an answer.
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "core/common/error.hpp"
#include "core/server/json_limits.hpp"
#include "core/server/api_error.hpp"
#include "core/template/chat_template.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t nul = input.find('\0');
  const std::string source(input.substr(0, nul));
  auto messages = nlohmann::ordered_json::array(
      {{{"role", "system"}, {"content", "Be brief."}}, {{"role", "user"}, {"content", "Hi"}},
       {{"role", "assistant"}, {"content", "Hello"}}, {{"role", "user"}, {"content", "2+2?"}}});
  try {
    if (nul != std::string_view::npos) {
      const std::string_view json = input.substr(nul + 1);
      loom::check_json_limits(json, loom::JsonLimits{}, "messages");  // as the routes do first
      auto parsed = nlohmann::ordered_json::parse(json, nullptr, /*allow_exceptions=*/false);
      if (parsed.is_array()) messages = std::move(parsed);
    }
    const loom::ChatTemplate chat_template(source, "<s>", "</s>");
    (void)chat_template.render(messages, true);
  } catch (const loom::Error&) {
  } catch (const loom::ApiError&) {
  }
  return 0;
}
