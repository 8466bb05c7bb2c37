// The host's sentence embedding of a semantic-cache question, shared by the server's lookups
// (one query) and the plugin's create (semantic_cache interface 1.2: an embed callback, with
// which the embedding plugin embeds its calibration set).
#pragma once

#include <string_view>

#include "core/engine/embedding_worker.hpp"
#include "loom/semantic_cache.h"

namespace loom {

// The L2-normalised embedding of `text` ([dim] in .vectors, or .error). Text longer than the
// encoder takes keeps its start and the closing [SEP]. Blocks for the encoder's worker.
EmbeddingResult embed_question(EmbeddingWorker& encoder, std::string_view text);

// Create args whose embed() runs embed_question on `encoder`; encoder null: no callback and
// embedding_dim 0. The encoder must outlive the plugin's create().
loom_semantic_cache_create_args semantic_cache_create_args(EmbeddingWorker* encoder);

}  // namespace loom
