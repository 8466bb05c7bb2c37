// GET /tokenizer_info, as vLLM serves it: what a client needs to tokenize on its own side the way
// the server does (special tokens, whether BOS is added, the chat template, the context length).
// lm-eval's local-completions finds a server's tokenizer through it (with /tokenize and
// /detokenize) instead of downloading one from the Hub.
#pragma once

#include <nlohmann/json.hpp>

#include "core/engine/engine_api.hpp"
#include "core/server/api_context.hpp"

namespace loom {

class Tokenizer;
class ChatTemplate;

// {"tokenizer_class", "bos_token", "eos_token", "pad_token", "unk_token", "add_bos_token",
//  "add_eos_token", "model_max_length", "vocab_size", "chat_template"}; a token the model lacks is null.
nlohmann::json tokenizer_info_json(const Tokenizer& tok, const ChatTemplate* chat_template, const ModelInfo& info);

void handle_tokenizer_info(const ApiContext& api, const HttpRequest& request, const std::shared_ptr<HttpExchange>& ex);

}  // namespace loom
