#include "core/server/template_routes.hpp"

#include "core/server/chat_prompt.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/content_shield.hpp"
#include "core/server/json_fields.hpp"

namespace loom {

PreparedAnswer prepare_apply_template(const ApiContext& api, const HttpRequest& request) {
  const ChatRequest parsed = parse_chat_request(request.body());
  api.check_model(parsed.params.model);
  ContentShield shield(api.engine.tokenizer());
  const std::string prompt = shield.restore(apply_chat_prompt(api.chat_template(), request.body(), parsed.messages, &shield));
  return [reply = HttpReply{200, "application/json", dump_json(Json{{"prompt", prompt}}), {}}](
             const std::shared_ptr<HttpExchange>& ex) { ex->reply(reply); };
}

}  // namespace loom
