// Response bodies of the OpenAI API, built from native values: completions and chat completions,
// their streaming chunks, the usage chunk, /v1/models and the error object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/server/api_error.hpp"
#include "core/server/chat_output.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

enum class ApiKind { kCompletion, kChat };

// What every response and chunk of one request repeats.
struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
  // Set when the answer came from the semantic cache: its similarity (1 = exact). Every body and
  // chunk then carries "semantic_cache": {"hit": true, "similarity": s}.
  std::optional<float> semantic_similarity;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
  int32_t cached_tokens = 0;  // prompt tokens not computed: usage.prompt_tokens_details.cached_tokens
};

// A fresh meta: a random id with the kind's prefix, created = now.
ResponseMeta make_response_meta(ApiKind kind, std::string model);

// "stop" or "length"; abort and error never reach a client as a finish reason.
const char* openai_finish_reason(FinishReason reason);

// One finished choice of a non-streaming response.
struct ChoiceResult {
  int32_t index = 0;
  std::string text;
  FinishReason finish = FinishReason::kStop;
  Json logprobs;  // null when not asked for
  Json prompt_logprobs;  // vLLM's prompt_logprobs; null: the field is left out
  // Chat: the reasoning (reasoning_content and vLLM's reasoning) and the tool calls; with calls,
  // content is null when empty and a finish by stop is "tool_calls".
  std::string reasoning;
  std::vector<ToolCallOut> tool_calls;
};

// The whole non-streaming response, choices in the order given.
std::string completion_response_json(const ResponseMeta& meta, const std::vector<ChoiceResult>& choices,
                                     Usage usage);

// What one streaming chunk carries for one choice. Chat: `role_delta` makes the opening delta
// {"role": "assistant"}; otherwise the delta is {"content": text}, or {} when text is empty.
struct ChunkChoice {
  int32_t index = 0;
  std::string text;
  std::optional<FinishReason> finish;
  bool role_delta = false;
  Json logprobs;  // of the tokens this chunk carries; null when not asked for
  Json prompt_logprobs;  // first chunk of a choice, when asked for; null: left out
  // Chat: reasoning and content deltas, and the delta's tool_calls array (null: none).
  std::string reasoning;
  Json tool_calls;
  bool finish_tool_calls = false;  // the choice made calls: a stop finish reads "tool_calls"
};

// The two deltas OpenAI streams a call as: {index, id, type, function: {name, arguments: ""}},
// then {index, function: {arguments}} (the whole arguments text as one fragment).
Json tool_call_header_delta(const ToolCallOut& call);
Json tool_call_arguments_delta(const ToolCallOut& call);

// One streaming chunk. `usage_null` adds "usage": null, as OpenAI does on every chunk but the
// last when usage is asked for.
std::string stream_chunk_json(const ResponseMeta& meta, const ChunkChoice& choice, bool usage_null);

// The closing chunk when stream_options.include_usage: no choices, just usage.
std::string usage_chunk_json(const ResponseMeta& meta, Usage usage);

// {"error": {"message", "type", "param", "code"}}
std::string error_json(const ApiError& error);

// GET /v1/models
std::string models_json(const ModelInfo& model);
// GET /v1/models/{id}: the one card
std::string model_json(const ModelInfo& model);

}  // namespace loom
