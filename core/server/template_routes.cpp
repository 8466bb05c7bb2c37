#include "core/server/template_routes.hpp"

#include "core/server/chat_prompt.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/json_fields.hpp"

namespace loom {
namespace {

void handle_apply_template(const ApiContext& api, const HttpRequest& request,
                           const std::shared_ptr<HttpExchange>& exchange) {
  reply_errors(*exchange, [&] {
    api.check_api_key(request);
    const ChatRequest parsed = parse_chat_request(request.body());
    api.check_model(parsed.params.model);
    const std::string prompt = apply_chat_prompt(api.chat_template(), request.body(), parsed.messages);
    exchange->reply(HttpReply{200, "application/json", dump_json(Json{{"prompt", prompt}}), {}});
  });
}

}  // namespace

void add_template_routes(HttpRouter& router, const std::shared_ptr<const ApiContext>& api) {
  router.add(boost::beast::http::verb::post, "/apply-template",
             [api](const HttpRequest& r, std::shared_ptr<HttpExchange> ex) { handle_apply_template(*api, r, ex); });
}

}  // namespace loom
