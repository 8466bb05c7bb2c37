// POST /v1/embeddings: parsed on the HTTP thread, embedded on the embedding model's worker
// (batched there with every other request waiting), answered on the connection's strand. 404
// when the server has no [embedding] model.
#pragma once

#include <memory>

#include "core/server/api_context.hpp"
#include "core/server/http_router.hpp"

namespace loom {

void add_embedding_routes(HttpRouter& router, const std::shared_ptr<const ApiContext>& api);

}  // namespace loom
