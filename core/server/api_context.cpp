#include "core/server/api_context.hpp"

#include "core/tokenizer/tokenizer.hpp"

namespace loom {
namespace {

// Compares without an early exit so the time taken says nothing about where keys differ.
bool same_secret(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  unsigned diff = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    diff |= static_cast<unsigned char>(a[i]) ^ static_cast<unsigned char>(b[i]);
  }
  return diff == 0;
}

}  // namespace

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

int32_t resolve_max_tokens(size_t n_prompt, std::optional<int32_t> requested, int32_t max_model_len,
                           std::optional<int32_t> fallback, const std::string& prompt_param) {
  constexpr int32_t kUnknownLenDefault = 16;
  if (max_model_len <= 0) return requested.value_or(fallback.value_or(kUnknownLenDefault));
  const int64_t limit = max_model_len;
  const int64_t n = static_cast<int64_t>(n_prompt);
  if (n >= limit) {
    throw bad_field(prompt_param, "This model's maximum context length (max_model_len) is " +
                                      std::to_string(limit) + " tokens, but the prompt ('" +
                                      prompt_param + "') has " + std::to_string(n) +
                                      " tokens, leaving no room for a completion");
  }
  const int64_t room = limit - n;
  if (!requested) return static_cast<int32_t>(fallback ? std::min<int64_t>(*fallback, room) : room);
  if (*requested > room) {
    throw bad_field("max_tokens", "This model's maximum context length (max_model_len) is " +
                                      std::to_string(limit) + " tokens. However, you requested " +
                                      std::to_string(n + *requested) + " tokens (" +
                                      std::to_string(n) + " in the prompt, " +
                                      std::to_string(*requested) +
                                      " in max_tokens). Please reduce the prompt or max_tokens.");
  }
  return *requested;
}

}  // namespace loom
