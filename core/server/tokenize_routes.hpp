// POST /tokenize and POST /detokenize: the served model's tokenizer over HTTP, with the request
// shapes of both peers so their clients work unchanged:
//   llama.cpp server: /tokenize {"content", "add_special", "parse_special", "with_pieces"} ->
//                     {"tokens"}; /detokenize {"tokens"} -> {"content"}
//   vLLM:             /tokenize {"prompt" | "messages", "add_special_tokens"} ->
//                     {"tokens", "count", "max_model_len"}; /detokenize {"tokens"} -> {"prompt"}
// ("text" is accepted as another name of the text.) Replies carry the keys of both.
#pragma once

#include "core/server/api_context.hpp"

namespace loom {

PreparedAnswer prepare_tokenize(const ApiContext& api, const HttpRequest& request);
PreparedAnswer prepare_detokenize(const ApiContext& api, const HttpRequest& request);

}  // namespace loom
