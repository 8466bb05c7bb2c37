#include "core/server/generation_routes.hpp"

#include "core/tokenizer/tokenizer.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"
#include "core/server/generation_stream.hpp"

namespace loom {
namespace {

constexpr int32_t kCompletionDefaultMaxTokens = 16;  // OpenAI's and vLLM's default

void submit(const ApiContext& api, const std::shared_ptr<HttpExchange>& exchange, ApiKind kind,
            const GenerationParams& params, std::vector<int32_t> prompt,
            const std::string& prompt_param) {
  const ModelInfo& info = api.engine.model_info();
  check_prompt_tokens(prompt, api.vocab_size(), prompt_param);
  // Chat answers run until the model stops unless limited; completions default to 16 tokens.
  const std::optional<int32_t> fallback =
      kind == ApiKind::kChat ? std::nullopt : std::optional<int32_t>(kCompletionDefaultMaxTokens);
  GenerateRequest request;
  request.sampling = params.sampling;
  request.sampling.max_tokens = resolve_max_tokens(prompt.size(), params.max_tokens,
                                                   info.max_model_len, fallback, prompt_param);
  request.n = params.n;
  request.cache_salt = params.cache_salt;
  apply_slo_fields(params.slo, request);
  StreamSettings settings{make_response_meta(kind, info.name), params.stream,
                          params.stream && params.include_usage,
                          static_cast<int32_t>(prompt.size()), params.n,
                          params.sampling.logprobs.has_value()};
  request.prompt = std::move(prompt);
  GenerationStream::start(exchange, api.engine, std::move(settings), std::move(request));
}

}  // namespace

void handle_completions(const ApiContext& api, const HttpRequest& request,
                        const std::shared_ptr<HttpExchange>& exchange) {
  reply_errors(*exchange, [&] {
    api.check_api_key(request);
    CompletionRequest parsed = parse_completion_request(request.body());
    apply_slo_headers(request, parsed.params.slo);
    api.check_model(parsed.params.model);
    std::vector<int32_t> prompt = parsed.prompt_text
                                      ? api.engine.tokenizer().encode(*parsed.prompt_text, true)
                                      : std::move(parsed.prompt_tokens);
    submit(api, exchange, ApiKind::kCompletion, parsed.params, std::move(prompt), "prompt");
  });
}

void handle_chat_completions(const ApiContext& api, const HttpRequest& request,
                             const std::shared_ptr<HttpExchange>& exchange) {
  reply_errors(*exchange, [&] {
    api.check_api_key(request);
    ChatRequest parsed = parse_chat_request(request.body());
    apply_slo_headers(request, parsed.params.slo);
    api.check_model(parsed.params.model);
    const ChatTemplate* chat_template = api.chat_template();
    const std::string text = apply_chat_prompt(chat_template, request.body(), parsed.messages);
    submit(api, exchange, ApiKind::kChat, parsed.params,
           tokenize_chat_prompt(api.engine.tokenizer(), chat_template, text), "messages");
  });
}

}  // namespace loom
