#include "core/server/api_context.hpp"

#include <boost/beast/core/string.hpp>

#include "core/common/logging.hpp"
#include "core/server/json_limits.hpp"
#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

// Compares without an early exit, and in a time that depends only on the length of what the
// client sent: neither where the keys differ nor the key's own length shows in the timing.
bool same_secret(std::string_view given, std::string_view secret) {
  unsigned diff = given.size() == secret.size() ? 0u : 1u;
  const size_t n = secret.size();
  for (size_t i = 0; i < given.size(); ++i) {
    const unsigned char s = n > 0 ? static_cast<unsigned char>(secret[i % n]) : 0;
    diff |= static_cast<unsigned char>(given[i]) ^ s;
  }
  return diff == 0 && n > 0;
}

// "application/json" with any parameters (charset=utf-8), case-insensitive.
bool is_json_media_type(std::string_view value) {
  const std::string_view type = value.substr(0, value.find(';'));
  const size_t end = type.find_last_not_of(" \t");
  const std::string_view trimmed = type.substr(0, end == std::string_view::npos ? 0 : end + 1);
  return boost::beast::iequals(boost::beast::string_view(trimmed.data(), trimmed.size()), "application/json");
}

}  // namespace

void ApiContext::check_json_body(const HttpRequest& request) const {
  const auto type = request[boost::beast::http::field::content_type];
  if (options.limits.require_json_content_type && !is_json_media_type(std::string_view(type.data(), type.size()))) {
    throw ApiError(415, "the request body must be sent with 'Content-Type: application/json'" +
                            std::string(type.empty() ? "" : ", got '" + std::string(type) + "'"),
                   std::nullopt, "invalid_request_error", "unsupported_media_type");
  }
  check_json_limits(request.body(), JsonLimits{options.limits.max_json_depth, options.limits.max_json_elements},
                    "the request body");
}

void prepare_then_answer(const std::shared_ptr<const ApiContext>& api, HttpRequest&& request,
                         const std::shared_ptr<HttpExchange>& exchange,
                         std::function<PreparedAnswer(const HttpRequest&)> prepare) {
  auto job = [api, exchange, prepare = std::move(prepare),
              request = std::make_shared<HttpRequest>(std::move(request))] {
    PreparedAnswer answer;
    std::optional<HttpReply> error = error_reply_of([&] { answer = prepare(*request); });
    auto finish = [exchange, answer = std::move(answer), error = std::move(error)] {
      if (exchange->client_gone()) return;
      if (error) return exchange->reply(*error);
      std::optional<HttpReply> late = error_reply_of([&] { answer(exchange); });
      if (late) exchange->reply(std::move(*late));
    };
    if (api->prepare) exchange->poster()->post(std::move(finish));
    else finish();
  };
  if (api->prepare) api->prepare->post(std::move(job));
  else job();
}

void ApiContext::check_api_key(const HttpRequest& request) const {
  if (options.api_key.empty()) return;
  const auto field = request[boost::beast::http::field::authorization];
  const std::string_view auth(field.data(), field.size());
  constexpr std::string_view kBearer = "Bearer ";
  if (auth.substr(0, kBearer.size()) != kBearer ||
      !same_secret(auth.substr(kBearer.size()), options.api_key)) {
    throw ApiError(401, "invalid or missing API key (send 'Authorization: Bearer <key>')",
                   std::nullopt, "invalid_request_error", "invalid_api_key");
  }
}

void ApiContext::check_model(const std::optional<std::string>& model) const {
  const std::string& served = engine.model_info().name;
  if (model && *model != served) {
    throw ApiError(400,
                   "The model '" + *model + "' does not exist; this server serves '" + served + "'",
                   "model", "invalid_request_error", "model_not_found");
  }
}

int32_t ApiContext::vocab_size() const {
  const int32_t v = engine.model_info().vocab_size;
  return v > 0 ? v : engine.tokenizer().vocab_size();
}

void check_prompt_tokens(const std::vector<int32_t>& ids, int32_t vocab_size,
                         const std::string& param) {
  if (ids.empty()) throw bad_field(param, "'" + param + "' is empty after tokenization");
  for (size_t i = 0; i < ids.size(); ++i) {
    if (ids[i] < 0 || ids[i] >= vocab_size) {
      throw bad_field(param, "token id " + std::to_string(ids[i]) + " at '" + param + "[" +
                                 std::to_string(i) + "]' is outside the vocabulary [0, " +
                                 std::to_string(vocab_size) + ")");
    }
  }
}

int32_t resolve_max_tokens(size_t n_prompt, std::optional<int32_t> requested, const TokenLimit& total,
                           std::optional<int32_t> fallback, const std::string& prompt_param) {
  constexpr int32_t kUnknownLenDefault = 16;
  if (total.tokens <= 0) return requested.value_or(fallback.value_or(kUnknownLenDefault));
  const int64_t limit = total.tokens;
  const int64_t n = static_cast<int64_t>(n_prompt);
  if (n >= limit) {
    throw bad_field(prompt_param, total.what + " is " + std::to_string(limit) + " tokens, but the prompt ('" +
                                      prompt_param + "') has " + std::to_string(n) +
                                      " tokens, leaving no room for a completion");
  }
  const int64_t room = limit - n;
  if (!requested) return static_cast<int32_t>(fallback ? std::min<int64_t>(*fallback, room) : room);
  if (*requested > room) {
    throw bad_field("max_tokens", total.what + " is " + std::to_string(limit) + " tokens. However, you requested " +
                                      std::to_string(n + *requested) + " tokens (" +
                                      std::to_string(n) + " in the prompt, " +
                                      std::to_string(*requested) +
                                      " in max_tokens). Please reduce the prompt or max_tokens.");
  }
  return *requested;
}

}  // namespace loom
