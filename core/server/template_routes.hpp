// POST /apply-template: a chat request body -> {"prompt": the text the model would be given}, as
// /v1/chat/completions renders it (the model's chat template, or the fallback format).
#pragma once

#include <memory>

#include "core/server/api_context.hpp"
#include "core/server/http_router.hpp"

namespace loom {

void add_template_routes(HttpRouter& router, const std::shared_ptr<const ApiContext>& api);

}  // namespace loom
