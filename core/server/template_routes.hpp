// POST /apply-template (vLLM's and llama.cpp's): a chat body rendered exactly as
// /v1/chat/completions would render it, returned as {"prompt": text}.
#pragma once

#include "core/server/api_context.hpp"

namespace loom {

PreparedAnswer prepare_apply_template(const ApiContext& api, const HttpRequest& request);

}  // namespace loom
