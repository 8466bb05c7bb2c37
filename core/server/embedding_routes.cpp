#include "core/server/embedding_routes.hpp"

#include "core/common/logging.hpp"
#include "core/engine/embedding_worker.hpp"
#include "core/server/embedding_request.hpp"

namespace loom {

PreparedAnswer prepare_embeddings(const ApiContext& api, const HttpRequest& request) {
  EmbeddingWorker* model = api.engine.embeddings();
  if (model == nullptr)
    throw ApiError(404, "this server has no embedding model (start it with --embedding-model DIR or an [embedding] "
                        "table)", std::nullopt, "invalid_request_error", "model_not_found");
  const Json body = parse_json_object(request.body());
  auto parsed = std::make_shared<EmbeddingRequest>(parse_embedding_request(body, *model));
  if (parsed->model && *parsed->model != model->name())
    throw ApiError(400, "The model '" + *parsed->model + "' does not exist; this server embeds with '" +
                            model->name() + "'", "model", "invalid_request_error", "model_not_found");
  LOOM_LOG_DEBUG("embeddings: {} inputs{}{}", parsed->inputs.size(), parsed->user.empty() ? "" : ", user ",
                 parsed->user);
  return [model, parsed](const std::shared_ptr<HttpExchange>& ex) {
    const std::shared_ptr<StrandPoster> poster = ex->poster();
    const std::weak_ptr<HttpExchange> weak = ex;
    const int32_t dim = model->dim();
    const std::string name = model->name();
    model->submit(parsed->inputs, [poster, weak, parsed, dim, name](EmbeddingResult result) {
      // On the worker thread: build the body here, touch the exchange only on its strand.
      HttpReply reply = result.error.empty()
                            ? HttpReply{200, "application/json",
                                        dump_json(embedding_response(*parsed, result.vectors, dim, name)), {}}
                            : api_error_reply(ApiError(500, "embedding failed: " + result.error, std::nullopt,
                                                       "server_error"));
      poster->post([weak, reply = std::move(reply)]() mutable {
        if (auto exchange = weak.lock()) exchange->reply(std::move(reply));
      });
    });
  };
}

}  // namespace loom
