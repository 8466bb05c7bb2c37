// POST /v1/embeddings: parsed off the HTTP threads (like every JSON POST route), embedded on the embedding model's worker
// (batched there with every other request waiting), answered on the connection's strand. 404
// when the server has no [embedding] model.
#pragma once

#include <memory>

#include "core/server/api_context.hpp"

namespace loom {

PreparedAnswer prepare_embeddings(const ApiContext& api, const HttpRequest& request);

}  // namespace loom
