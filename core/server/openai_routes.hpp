// The OpenAI-compatible API over an EngineInterface: /v1/completions, /v1/chat/completions,
// /v1/models, /tokenize, /detokenize, /health and /metrics. Handlers parse and validate into
// native requests, tokenize, submit, and leave the rest to GenerationStream.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "core/config/server_limits.hpp"
#include "core/engine/engine_api.hpp"
#include "core/server/api_error.hpp"
#include "core/server/http_router.hpp"
#include "core/server/reasoning_parser.hpp"

namespace loom {

class ChatTemplate;

// How chat output is parsed, as configured: "auto" reads the formats from the chat template.
struct ChatOutputConfig {
  std::string reasoning_parser = "auto";  // auto, none or think
  ReasoningTags reasoning_tags;
  std::string tool_parser = "auto";  // auto, none, hermes, llama3 or mistral
};

struct OpenAiRouteOptions {
  std::string api_key;  // non-empty: /v1/* needs "Authorization: Bearer <api_key>"
  // Set while the server drains on shutdown: /health answers 503 so balancers move away.
  std::shared_ptr<const std::atomic<bool>> draining;
  std::string metrics_prefix = "loom";  // /metrics names: <prefix>:num_requests_running, ...
  // --chat-template: used instead of the model's own template; null = the model's.
  std::shared_ptr<const ChatTemplate> chat_template;
  ChatOutputConfig chat_output;  // [model] reasoning_parser / reasoning tags / tool_parser
  ServerLimits limits;           // [server] limits and security switches
};

// An OpenAI error body for `status` (the router's and transport's errors use it too).
HttpReply api_error_reply(const ApiError& error);
HttpReply api_error_reply(unsigned status, const std::string& message);

// Adds every route to `router`. `engine` must outlive the router's use.
void add_openai_routes(HttpRouter& router, EngineInterface& engine, OpenAiRouteOptions options);

}  // namespace loom
