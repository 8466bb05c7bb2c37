// POST /v1/completions and POST /v1/chat/completions: body -> validated native request ->
// tokens -> EngineInterface::submit, with the response left to a GenerationStream.
#pragma once

#include "core/server/api_context.hpp"

namespace loom {

// Parse, check, template and tokenize (off the HTTP threads); the answer submits and streams.
PreparedAnswer prepare_completions(const ApiContext& api, const HttpRequest& request);
PreparedAnswer prepare_chat_completions(const ApiContext& api, const HttpRequest& request);

}  // namespace loom
