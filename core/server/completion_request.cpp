#include "core/server/completion_request.hpp"

#include <algorithm>
#include <limits>

#include "core/server/api_error.hpp"
#include "core/server/request_fields.hpp"
#include "core/server/structured_output_request.hpp"

namespace loom {
namespace {

constexpr int64_t kInt32Max = std::numeric_limits<int32_t>::max();

std::vector<int32_t> read_token_ids(const Json& array, const std::string& field) {
  if (array.empty()) throw bad_field(field, "'" + field + "' must not be an empty array");
  std::vector<int32_t> ids;
  ids.reserve(array.size());
  for (size_t i = 0; i < array.size(); ++i) {
    ids.push_back(static_cast<int32_t>(
        as_int(array[i], field + "[" + std::to_string(i) + "]", 0, kInt32Max)));
  }
  return ids;
}

void read_prompts(const Json& body, CompletionRequest& out) {
  const auto it = body.find("prompt");
  if (it == body.end() || it->is_null()) throw bad_field("prompt", "'prompt' is required");
  const Json& p = *it;
  if (p.is_string()) {
    out.prompts.push_back(CompletionPrompt{p.get<std::string>(), {}});
    return;
  }
  if (!p.is_array()) {
    throw bad_field("prompt",
                    "'prompt' must be a string or an array of token ids, got " + json_type_text(p));
  }
  if (p.empty()) throw bad_field("prompt", "'prompt' must not be an empty array");
  const Json& first = p[0];
  if (!first.is_string() && !first.is_array()) {
    out.prompts.push_back(CompletionPrompt{std::nullopt, read_token_ids(p, "prompt")});
    return;
  }
  // A batch: strings or token lists (mixed as the OpenAI schema allows neither, but both forms
  // are read element by element).
  if (p.size() > kMaxPrompts) {
    throw bad_field("prompt", "'prompt' holds " + std::to_string(p.size()) + " prompts; at most " +
                                  std::to_string(kMaxPrompts) + " are allowed in one request");
  }
  for (size_t i = 0; i < p.size(); ++i) {
    const std::string field = "prompt[" + std::to_string(i) + "]";
    if (p[i].is_string()) {
      out.prompts.push_back(CompletionPrompt{p[i].get<std::string>(), {}});
    } else if (p[i].is_array()) {
      out.prompts.push_back(CompletionPrompt{std::nullopt, read_token_ids(p[i], field)});
    } else {
      throw bad_field(field, "'" + field + "' must be a string or an array of token ids, got " +
                                 json_type_text(p[i]));
    }
  }
}

}  // namespace

CompletionRequest parse_completion_request(std::string_view body) {
  Json json = parse_json_object(body);
  check_request_fields(json, RequestRoute::kCompletions);
  CompletionRequest out;
  out.params = parse_generation_params(json, /*chat=*/false);
  out.params.sampling.grammar = parse_structured_output(json, body);
  read_prompts(json, out);
  out.echo = read_bool(json, "echo", "echo").value_or(false);
  out.prompt_logprobs_field = out.params.sampling.prompt_logprobs.has_value();
  if (out.echo && out.params.sampling.logprobs) {
    // The prompt is scored with as many alternatives as the completion.
    const int32_t want = *out.params.sampling.logprobs;
    auto& prompt = out.params.sampling.prompt_logprobs;
    prompt = prompt ? std::max(*prompt, want) : want;
  }
  out.body = std::move(json);
  return out;
}

}  // namespace loom
