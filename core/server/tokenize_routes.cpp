#include "core/server/tokenize_routes.hpp"

#include <string>
#include <vector>

#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/utf8.hpp"
#include "core/server/api_error.hpp"
#include "core/server/chat_prompt.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/content_shield.hpp"
#include "core/server/json_fields.hpp"

namespace loom {
namespace {

// Text of a /tokenize body: "prompt" (vLLM), "content" (llama.cpp) or "text"; exactly one.
std::string tokenize_text(const Json& body) {
  std::optional<std::string> text;
  for (const char* key : {"prompt", "content", "text"}) {
    std::optional<std::string> v = read_string(body, key, key);
    if (v && text) throw bad_field(key, "give only one of 'prompt', 'content' and 'text'");
    if (v) text = std::move(v);
  }
  if (!text) throw bad_field("prompt", "'prompt' (or 'text') is required");
  return *text;
}

std::vector<int32_t> tokenize_body(const ApiContext& api, const HttpRequest& request, const Json& body) {
  const Tokenizer& tok = api.engine.tokenizer();
  if (body.contains("messages")) {
    // A chat body: rendered exactly as /v1/chat/completions would, then tokenized the same way.
    const ChatRequest parsed = parse_chat_request(request.body());
    const ChatTemplate* tmpl = api.chat_template();
    ContentShield shield(tok);
    ContentShield* use = api.options.limits.special_tokens_in_chat ? nullptr : &shield;
    return tokenize_chat_prompt(tok, tmpl, apply_chat_prompt(tmpl, request.body(), parsed.messages, use), use);
  }
  const std::string text = tokenize_text(body);
  // llama.cpp's key first; vLLM's add_special_tokens is the same switch.
  std::optional<bool> add_special = read_bool(body, "add_special", "add_special");
  if (!add_special) add_special = read_bool(body, "add_special_tokens", "add_special_tokens");
  const bool parse_special = read_bool(body, "parse_special", "parse_special").value_or(true);
  return tok.encode(text, add_special.value_or(true), parse_special);
}

PreparedAnswer reply_json(const Json& body) {
  return [reply = HttpReply{200, "application/json", dump_json(body), {}}](const std::shared_ptr<HttpExchange>& ex) {
    ex->reply(reply);
  };
}

}  // namespace

PreparedAnswer prepare_tokenize(const ApiContext& api, const HttpRequest& request) {
  {
    const Json body = parse_json_object(request.body());
    api.check_model(read_string(body, "model", "model"));
    const std::vector<int32_t> ids = tokenize_body(api, request, body);
    Json tokens = Json::array();
    if (read_bool(body, "with_pieces", "with_pieces").value_or(false)) {
      // llama.cpp's shape: the piece as text when it is valid UTF-8 on its own, else its bytes.
      const Tokenizer& tok = api.engine.tokenizer();
      for (int32_t id : ids) {
        const std::string piece = tok.token_to_piece(id, /*render_special=*/true);
        Json entry{{"id", id}};
        if (utf8_is_valid(piece)) {
          entry["piece"] = piece;
        } else {
          Json bytes = Json::array();
          for (unsigned char c : piece) bytes.push_back(static_cast<int>(c));
          entry["piece"] = bytes;
        }
        tokens.push_back(entry);
      }
    } else {
      tokens = ids;
    }
    return reply_json(Json{{"tokens", tokens},
                           {"count", ids.size()},
                           {"max_model_len", api.engine.model_info().max_model_len}});
  }
}

PreparedAnswer prepare_detokenize(const ApiContext& api, const HttpRequest& request) {
  {
    const Json body = parse_json_object(request.body());
    api.check_model(read_string(body, "model", "model"));
    const auto it = body.find("tokens");
    if (it == body.end() || it->is_null()) throw bad_field("tokens", "'tokens' is required");
    if (!it->is_array())
      throw bad_field("tokens", "'tokens' must be an array of token ids, got " + json_type_text(*it));
    const int32_t vocab = api.vocab_size();
    std::vector<int32_t> ids;
    for (size_t i = 0; i < it->size(); ++i)
      ids.push_back(static_cast<int32_t>(as_int((*it)[i], "tokens[" + std::to_string(i) + "]", 0, vocab - 1)));
    // Invalid UTF-8 (a token list cut inside a character) is replaced, so the reply stays JSON.
    const std::string decoded = utf8_sanitize(api.engine.tokenizer().decode(ids));
    return reply_json(Json{{"content", decoded}, {"prompt", decoded}});
  }
}

}  // namespace loom
