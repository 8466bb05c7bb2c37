// POST /v1/completions and POST /v1/chat/completions: body -> validated native request ->
// tokens -> EngineInterface::submit, with the response left to a GenerationStream.
#pragma once

#include <memory>

#include "core/server/api_context.hpp"

namespace loom {

void handle_completions(const ApiContext& api, const HttpRequest& request,
                        const std::shared_ptr<HttpExchange>& exchange);
void handle_chat_completions(const ApiContext& api, const HttpRequest& request,
                             const std::shared_ptr<HttpExchange>& exchange);

}  // namespace loom
