// POST /v1/embeddings bodies as OpenAI defines them, parsed into native form: `input` as a
// string, a list of strings, a list of token ids, or a list of such lists; `encoding_format`
// float (default) or base64 (little-endian f32 bytes); `dimensions` only when it is the model's
// own size; `model` and `user`. Every field goes through the one table (request_fields.hpp).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/server/json_fields.hpp"

namespace loom {

class EmbeddingWorker;

struct EmbeddingRequest {
  std::optional<std::string> model;
  std::vector<std::vector<int32_t>> inputs;  // token ids per input, [CLS] ... [SEP] for text
  bool base64 = false;
  std::string user;
};

// Throws a 400 ApiError naming the field for anything wrong: an unknown field, an empty input,
// an input longer than the model takes, a token id outside its vocabulary, a `dimensions`
// other than the model's own.
EmbeddingRequest parse_embedding_request(const Json& body, const EmbeddingWorker& model);

// The response body: {"object": "list", "data": [{"object": "embedding", "index", "embedding"}],
// "model", "usage": {"prompt_tokens", "total_tokens"}}. vectors: [n_inputs, dim].
Json embedding_response(const EmbeddingRequest& request, const std::vector<float>& vectors, int32_t dim,
                        const std::string& model_name);

// Standard base64 (RFC 4648, with padding) of raw bytes.
std::string base64_encode(const void* data, size_t size);

}  // namespace loom
