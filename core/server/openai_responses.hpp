// Response bodies of the OpenAI API, built from native values: completions and chat completions,
// their streaming chunks, the usage chunk, /v1/models and the error object.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "core/engine/engine_api.hpp"
#include "core/server/api_error.hpp"

namespace loom {

enum class ApiKind { kCompletion, kChat };

// What every response and chunk of one request repeats.
struct ResponseMeta {
  ApiKind kind = ApiKind::kCompletion;
  std::string id;       // "cmpl-..." / "chatcmpl-..."
  int64_t created = 0;  // unix seconds
  std::string model;
};

struct Usage {
  int32_t prompt_tokens = 0;
  int32_t completion_tokens = 0;
};

// A fresh meta: a random id with the kind's prefix, created = now.
ResponseMeta make_response_meta(ApiKind kind, std::string model);

// "stop" or "length"; abort and error never reach a client as a finish reason.
const char* openai_finish_reason(FinishReason reason);

// The whole non-streaming response.
std::string completion_response_json(const ResponseMeta& meta, const std::string& text,
                                     FinishReason finish, Usage usage);

// One streaming chunk. Chat: `role_delta` makes the opening delta {"role": "assistant"};
// otherwise the delta is {"content": text}, or {} when text is empty. `usage_null` adds
// "usage": null, as OpenAI does on every chunk but the last when usage is asked for.
std::string stream_chunk_json(const ResponseMeta& meta, const std::string& text,
                              std::optional<FinishReason> finish, bool role_delta, bool usage_null);

// The closing chunk when stream_options.include_usage: no choices, just usage.
std::string usage_chunk_json(const ResponseMeta& meta, Usage usage);

// {"error": {"message", "type", "param", "code"}}
std::string error_json(const ApiError& error);

// GET /v1/models
std::string models_json(const ModelInfo& model);

}  // namespace loom
