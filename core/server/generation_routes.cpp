#include "core/server/generation_routes.hpp"

#include "core/template/chat_template.hpp"
#include "core/tokenizer/tokenizer.hpp"
#include "core/server/chat_request.hpp"
#include "core/server/completion_request.hpp"
#include "core/server/content_shield.hpp"
#include "core/server/generation_stream.hpp"
#include "core/server/request_limits.hpp"
#include "core/server/semantic_cache_request.hpp"

namespace loom {
namespace {

constexpr int32_t kCompletionDefaultMaxTokens = 16;  // OpenAI's and vLLM's default

// One engine request for one prompt, from the shared parameters.
GenerateRequest make_request(const ApiContext& api, ApiKind kind, const GenerationParams& params,
                             std::vector<int32_t> prompt, const std::string& prompt_param) {
  const ModelInfo& info = api.engine.model_info();
  check_prompt_tokens(prompt, api.vocab_size(), prompt_param);
  const TokenLimit total_limit = check_prompt_limits(api.options.limits, info.max_model_len, prompt.size(), prompt_param);
  // Chat answers run until the model stops unless limited; completions default to 16 tokens.
  const std::optional<int32_t> fallback =
      kind == ApiKind::kChat ? std::nullopt : std::optional<int32_t>(kCompletionDefaultMaxTokens);
  GenerateRequest request;
  request.sampling = params.sampling;
  request.sampling.max_tokens =
      resolve_max_tokens(prompt.size(), params.max_tokens, total_limit, fallback, prompt_param);
  // best_of ranks candidates by their cumulative logprob: the engine reports it per token.
  if (params.best_of > params.n && !request.sampling.logprobs) request.sampling.logprobs = 0;
  request.n = params.best_of;
  request.cache_salt = params.cache_salt;
  apply_slo_fields(params.slo, request);
  request.prompt = std::move(prompt);
  return request;
}

// How this chat request's output is parsed: reasoning when configured or when the template
// writes the tags; tool calls when tools are given and tool_choice is not none, in the configured
// family or the one the template writes (a 400 naming tools when there is none).
ChatOutputSettings chat_output_settings(const ApiContext& api, const ChatTemplate* chat_template,
                                        const ChatRequest& parsed, const std::string& prompt) {
  const ChatOutputConfig& cfg = api.options.chat_output;
  const std::string_view source = chat_template ? std::string_view(chat_template->source()) : std::string_view();
  ChatOutputSettings out;
  const bool reasoning = cfg.reasoning_parser == "think" ||
                         (cfg.reasoning_parser == "auto" && template_uses_reasoning(source, cfg.reasoning_tags));
  if (reasoning) {
    out.reasoning = cfg.reasoning_tags;
    out.reasoning_open_at_start = prompt_opens_reasoning(prompt, cfg.reasoning_tags);
  }
  if (parsed.tools.parses_calls()) {
    const std::optional<ToolCallFormat> configured = parse_tool_call_format(cfg.tool_parser);
    out.tool_calls = configured ? *configured : tool_call_format_from_template(source);
    if (out.tool_calls == ToolCallFormat::kNone) {
      throw bad_field("tools", "'tools' were given but this model's chat template writes no tool-call format the "
                               "server knows (hermes, llama3, mistral); set [model] tool_parser");
    }
    out.parallel_tool_calls = parsed.tools.parallel;
  }
  return out;
}

StreamSettings make_settings(const ApiContext& api, ApiKind kind, const GenerationParams& params) {
  StreamSettings settings;
  settings.meta = make_response_meta(kind, api.engine.model_info().name);
  settings.stream = params.stream;
  settings.include_usage = params.stream && params.include_usage;
  settings.n = params.n;
  settings.best_of = params.best_of;
  settings.logprobs = params.sampling.logprobs.has_value();
  settings.prompt_logprobs = params.sampling.prompt_logprobs.has_value();
  settings.user = params.user.value_or("");
  settings.timeout = std::chrono::seconds(api.options.limits.request_timeout);
  return settings;
}

// The answer of a generation route: the semantic cache's stored answer or the engine's,
// started on the strand (semantic_cache_request.hpp).
PreparedAnswer start_generation(const ApiContext& api, StreamSettings settings, std::vector<GenerateRequest> requests,
                                std::optional<SemanticQuery> query, std::string skipped) {
  struct State {
    StreamSettings settings;
    std::vector<GenerateRequest> requests;
    std::optional<SemanticQuery> query;
    std::string skipped;
  };
  auto state = std::make_shared<State>(State{std::move(settings), std::move(requests), std::move(query), std::move(skipped)});
  return [&api, state](const std::shared_ptr<HttpExchange>& exchange) {
    ::loom::start_generation(exchange, api, std::move(state->settings), std::move(state->requests),
                             std::move(state->query), state->skipped);
  };
}

}  // namespace

PreparedAnswer prepare_completions(const ApiContext& api, const HttpRequest& request) {
  {
    CompletionRequest parsed = parse_completion_request(request.body());
    apply_slo_headers(request, parsed.params.slo);
    api.check_model(parsed.params.model);
    check_request_limits(api.options.limits, parsed.params, /*chat=*/false);
    StreamSettings settings = make_settings(api, ApiKind::kCompletion, parsed.params);
    settings.echo = parsed.echo;
    // With echo + logprobs the prompt's scores come back in the logprobs object, not beside it,
    // unless prompt_logprobs was asked for explicitly.
    settings.prompt_logprobs = parsed.prompt_logprobs_field;
    const Tokenizer& tokenizer = api.engine.tokenizer();
    std::vector<GenerateRequest> requests;
    const bool many = parsed.prompts.size() > 1;
    for (size_t p = 0; p < parsed.prompts.size(); ++p) {
      CompletionPrompt& prompt = parsed.prompts[p];
      std::vector<int32_t> ids = prompt.text ? tokenizer.encode(*prompt.text, true, api.options.limits.special_tokens_in_prompt)
                                             : std::move(prompt.tokens);
      const std::string param = many ? "prompt[" + std::to_string(p) + "]" : "prompt";
      GenerateRequest r = make_request(api, ApiKind::kCompletion, parsed.params, ids, param);
      settings.prompt_tokens += static_cast<int32_t>(r.prompt.size());
      if (settings.echo || settings.prompt_logprobs) {
        settings.prompts.push_back(EchoPrompt{prompt.text ? *prompt.text : tokenizer.decode(r.prompt), r.prompt});
      }
      requests.push_back(std::move(r));
    }
    // The semantic cache sees the one prompt's text (a token prompt's decoded) as its question.
    const CompletionPrompt& first = parsed.prompts[0];
    SemanticCacheInputs cache_in{parsed.body, parsed.params, requests[0], requests.size(),
                                 settings.echo || settings.prompt_logprobs,
                                 first.text ? *first.text : tokenizer.decode(requests[0].prompt), ""};
    std::string skipped;
    std::optional<SemanticQuery> query = semantic_query_for(api, request, cache_in, &skipped);
    return start_generation(api, std::move(settings), std::move(requests), std::move(query), std::move(skipped));
  }
}

PreparedAnswer prepare_chat_completions(const ApiContext& api, const HttpRequest& request) {
  {
    ChatRequest parsed = parse_chat_request(request.body());
    apply_slo_headers(request, parsed.params.slo);
    api.check_model(parsed.params.model);
    check_request_limits(api.options.limits, parsed.params, /*chat=*/true);
    const ChatTemplate* chat_template = api.chat_template();
    ContentShield shield(api.engine.tokenizer());
    ContentShield* use = api.options.limits.special_tokens_in_chat ? nullptr : &shield;
    const std::string text = apply_chat_prompt(chat_template, request.body(), parsed.messages, use);
    StreamSettings settings = make_settings(api, ApiKind::kChat, parsed.params);
    settings.chat_output = chat_output_settings(api, chat_template, parsed, text);
    // tool_choice required, a named function or strict tools constrain the answer to calls.
    if (auto grammar = tool_choice_grammar(parsed.tools, settings.chat_output.tool_calls)) {
      if (parsed.params.sampling.grammar) {
        throw bad_field("tool_choice", "'tool_choice' (or a strict tool) and a structured-output field both "
                                       "constrain the answer; send one");
      }
      parsed.params.sampling.grammar = std::move(grammar);
    }
    std::vector<GenerateRequest> requests;
    requests.push_back(make_request(api, ApiKind::kChat, parsed.params,
                                    tokenize_chat_prompt(api.engine.tokenizer(), chat_template, text, use), "messages"));
    // Llama 3's <|python_tag|> and Mistral's [TOOL_CALLS] are control tokens: the parser must see them.
    const ToolCallFormat tools = settings.chat_output.tool_calls;
    if (tools == ToolCallFormat::kLlama3Json || tools == ToolCallFormat::kMistral) {
      requests[0].sampling.skip_special_tokens = false;
    }
    settings.prompt_tokens = static_cast<int32_t>(requests[0].prompt.size());
    if (settings.prompt_logprobs) {
      settings.prompts.push_back(EchoPrompt{shield.restore(text), requests[0].prompt});
    }
    // The semantic cache's question is the last user turn; the rest of the conversation and the
    // template are its context, which must match exactly. Built only when there is a cache to
    // ask (without one the query is refused or skipped before it reads them).
    std::string question, context;
    if (api.engine.semantic_cache() != nullptr) {
      context = chat_template ? chat_template->source() : std::string();
      size_t last_user = parsed.messages.size();
      for (size_t i = parsed.messages.size(); i-- > 0;)
        if (parsed.messages[i].role == "user") {
          last_user = i;
          break;
        }
      for (size_t i = 0; i < parsed.messages.size(); ++i) {
        if (i == last_user) question = parsed.messages[i].content;
        else context += "\x1e" + parsed.messages[i].role + "\x1f" + parsed.messages[i].content;
      }
    }
    SemanticCacheInputs cache_in{parsed.body, parsed.params, requests[0], 1,
                                 settings.prompt_logprobs, question, context};
    std::string skipped;
    std::optional<SemanticQuery> query = semantic_query_for(api, request, cache_in, &skipped);
    return start_generation(api, std::move(settings), std::move(requests), std::move(query), std::move(skipped));
  }
}

}  // namespace loom
