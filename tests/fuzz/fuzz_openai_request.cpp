// The request bodies of /v1/chat/completions and /v1/completions, as the routes read them: the
// JSON shape limits first, then the parser and validator, and for chat the prompt rendered with
// a real chat template (Qwen3's: tools, reasoning, tool calls). Anything but a 400 ApiError or a
// loom::Error (a template's raise_exception) escaping is a finding: the router would answer 500.
// Selector byte: even = chat, odd = completions.
#include <cstdint>
#include <memory>

#include "core/common/error.hpp"
#include "core/server/api_error.hpp"
#include "core/server/chat_prompt.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"
#include "core/server/json_limits.hpp"
#include "core/template/chat_template.hpp"
#include "tests/fuzz/fuzz_support.hpp"

namespace {

const loom::ChatTemplate& qwen3_template() {
  static const loom::ChatTemplate t(loom::fuzz::read_text(loom::fuzz::data_path("chat_templates/Qwen-Qwen3-0.6B.jinja")),
                                    "", "<|im_end|>");
  return t;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto [selector, body] = loom::fuzz::select(data, size);
  try {
    loom::check_json_limits(body, loom::JsonLimits{}, "request body");
    if (selector % 2 == 0) {
      const loom::ChatRequest request = loom::parse_chat_request(body);
      (void)loom::apply_chat_prompt(&qwen3_template(), body, request.messages);
      (void)loom::render_chat_prompt(request.messages, true);
    } else {
      (void)loom::parse_completion_request(body);
    }
  } catch (const loom::ApiError&) {
  } catch (const loom::Error&) {
  }
  return 0;
}
