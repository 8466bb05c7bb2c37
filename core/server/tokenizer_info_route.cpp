#include "core/server/tokenizer_info_route.hpp"

#include "core/server/api_error.hpp"
#include "core/server/json_fields.hpp"
#include "core/template/chat_template.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/tokenizer/utf8.hpp"

namespace loom {
namespace {

nlohmann::json token_text(const Tokenizer& tok, int32_t id) {
  if (id < 0 || id >= tok.vocab_size()) return nullptr;
  return utf8_sanitize(tok.token_to_piece(id, /*render_special=*/true));
}

}  // namespace

nlohmann::json tokenizer_info_json(const Tokenizer& tok, const ChatTemplate* chat_template, const ModelInfo& info) {
  // What encoding with special tokens adds, read off the tokenizer itself rather than its files.
  const std::vector<int32_t> added = tok.encode("", /*add_special=*/true);
  const bool add_bos = !added.empty() && added.front() == tok.bos_id();
  const bool add_eos = !added.empty() && added.back() == tok.eos_id() && (added.size() > 1 || !add_bos);
  return nlohmann::json{{"tokenizer_class", "LoomGgufTokenizer"},
                        {"bos_token", token_text(tok, tok.bos_id())},
                        {"eos_token", token_text(tok, tok.eos_id())},
                        {"pad_token", nullptr},
                        {"unk_token", nullptr},
                        {"add_bos_token", add_bos},
                        {"add_eos_token", add_eos},
                        {"model_max_length", info.max_model_len},
                        {"vocab_size", tok.vocab_size()},
                        {"chat_template", chat_template ? nlohmann::json(chat_template->source()) : nlohmann::json(nullptr)}};
}

void handle_tokenizer_info(const ApiContext& api, const HttpRequest& request, const std::shared_ptr<HttpExchange>& ex) {
  reply_errors(*ex, [&] {
    api.check_api_key(request);
    const nlohmann::json body = tokenizer_info_json(api.engine.tokenizer(), api.chat_template(), api.engine.model_info());
    ex->reply(HttpReply{200, "application/json", dump_json(body), {}});
  });
}

}  // namespace loom
