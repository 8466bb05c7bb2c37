// The server's side of the semantic cache: which requests may use it, the query that identifies
// them, and the answer's way back.
//
// Guards, in order: the kind is on ([semantic_cache] table); the request opts in (field
// "semantic_cache": true or header x-loom-semantic-cache: on) unless opt_in = false, and did not
// opt out (x-loom-semantic-cache: off or "semantic_cache": false); its answer is reproducible
// (temperature 0 or a fixed seed) unless deterministic_only = false; it asks for one plain answer
// (one prompt, n = 1, best_of = 1, no logprobs, no echo or prompt logprobs). The query holds the
// model, the tenant (x-gateway-inference-fairness-id or user, and cache_salt), the rendered
// prompt tokens and every other field of the body that can change the answer (sampling, tools,
// response format, stop ...), so no answer is shared across any of them.
//
// A hit is answered as the engine would have: GenerationStream streams it (SSE chunks, usage
// with prompt_tokens_details.cached_tokens), the response carries "semantic_cache": {"hit": true,
// "similarity"} and the header x-loom-semantic-cache: hit. A miss is computed and its finished
// answer stored.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/engine/engine_api.hpp"
#include "core/engine/semantic_cache_client.hpp"
#include "core/server/api_context.hpp"
#include "core/server/generation_params.hpp"
#include "core/server/generation_stream.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

// What the route knows of one request, for the cache to decide on.
struct SemanticCacheInputs {
  const Json& body;               // the parsed body
  const GenerationParams& params;
  const GenerateRequest& request;  // the engine request (prompt tokens; sampling resolved)
  size_t num_prompts = 1;
  bool echo_or_prompt_logprobs = false;
  std::string text;     // the last user turn, or the completion prompt's text
  std::string context;  // everything else the answer depends on (earlier turns, system prompt)
};

// The query when this request uses the cache; nullopt otherwise, with *skipped set to why when
// it asked and was refused (for the response header). 400 when it asks and the server has no
// semantic cache.
std::optional<SemanticQuery> semantic_query_for(const ApiContext& api, const HttpRequest& http,
                                                const SemanticCacheInputs& in, std::string* skipped);

// Starts the response: with a query, the stored answer when there is one, else the engine's
// (stored once finished); without, the engine's as usual.
void start_generation(const std::shared_ptr<HttpExchange>& exchange, const ApiContext& api, StreamSettings settings,
                      std::vector<GenerateRequest> requests, std::optional<SemanticQuery> query,
                      const std::string& skipped);

}  // namespace loom
