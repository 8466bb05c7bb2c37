#include "core/server/completion_request.hpp"

#include <limits>

#include "core/server/api_error.hpp"
#include "core/server/structured_output_request.hpp"

namespace loom {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::vector<int32_t> read_token_ids(const Json& array, const std::string& field) {
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    ids.push_back(static_cast<int32_t>(
        as_int(array[i], field + "[" + std::to_string(i) + "]", 0, kInt32Max)));
  }
  return ids;
}

void read_prompt(const Json& body, CompletionRequest& out) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw bad_field("prompt", "'prompt' is required");
  const Json& p = *it;
  if (p.is_string()) {
    out.prompt_text = p.get<std::string>();
    return;
  }
  if (!p.is_array()) {
    throw bad_field("prompt",
                    "'prompt' must be a string or an array of token ids, got " + json_type_text(p));
  }
  if (p.empty()) throw bad_field("prompt", "'prompt' must not be an empty array");
  const Json& first = p[0];
  if (first.is_string() || first.is_array()) {
    // A batch: strings or token lists. Only a batch of one is served.
    if (p.size() != 1) {
      throw bad_field("prompt", "'prompt' holds " + std::to_string(p.size()) +
                                    " prompts; batched prompts are not supported, send one "
                                    "prompt per request");
    }
    if (first.is_string()) {
      out.prompt_text = first.get<std::string>();
    } else {
      if (first.empty()) throw bad_field("prompt", "'prompt[0]' must not be an empty array");
      out.prompt_tokens = read_token_ids(first, "prompt[0]");
    }
    return;
  }
  out.prompt_tokens = read_token_ids(p, "prompt");
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body) {
  const Json json = parse_json_object(body);
  CompletionRequest out;
  out.params = parse_generation_params(json, /*chat=*/false);
  out.params.sampling.grammar = parse_structured_output(json, body);
  read_prompt(json, out);
  return out;
}

}  // namespace loom
