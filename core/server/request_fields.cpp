#include "core/server/request_fields.hpp"

#include <array>
#include <string>

#include "core/server/api_error.hpp"

namespace loom {
namespace {

constexpr FieldUse kHonoured = FieldUse::kHonoured;
constexpr FieldUse kRefused = FieldUse::kRefused;

// name, completions, chat, use, note, allowed values (refused fields).
constexpr std::array kFields = {
    // The OpenAI request fields of both routes.
    RequestField{"model", true, true, kHonoured, "checked against the served name (ApiContext::check_model)", "", true},
    RequestField{"prompt", true, false, kHonoured, "completion_request: a string, ids, or a batch", ""},
    RequestField{"messages", false, true, kHonoured, "chat_request, rendered by the chat template", ""},
    RequestField{"suffix", true, false, kRefused, "fill-in-the-middle is not supported", "\"\""},
    RequestField{"max_tokens", true, true, kHonoured, "generation_params", ""},
    RequestField{"max_completion_tokens", false, true, kHonoured, "generation_params (wins over max_tokens)", ""},
    RequestField{"temperature", true, true, kHonoured, "generation_params -> sampler", ""},
    RequestField{"top_p", true, true, kHonoured, "generation_params -> sampler", ""},
    RequestField{"n", true, true, kHonoured, "generation_params: choices per prompt", ""},
    RequestField{"best_of", true, false, kHonoured, "generation_params: candidates, best n by cumulative logprob", ""},
    RequestField{"stream", true, true, kHonoured, "generation_stream (SSE)", ""},
    RequestField{"stream_options", true, true, kHonoured, "generation_params: include_usage", ""},
    RequestField{"logprobs", true, true, kHonoured, "generation_params -> engine logprobs", ""},
    RequestField{"top_logprobs", false, true, kHonoured, "generation_params", ""},
    RequestField{"echo", true, false, kHonoured, "completion_request: prompt text and prompt logprobs", ""},
    RequestField{"stop", true, true, kHonoured, "generation_params -> stop_checker", ""},
    RequestField{"presence_penalty", true, true, kHonoured, "generation_params -> logits_processors", ""},
    RequestField{"frequency_penalty", true, true, kHonoured, "generation_params -> logits_processors", ""},
    RequestField{"logit_bias", true, true, kHonoured, "generation_params -> logits_processors", ""},
    RequestField{"user", true, true, kHonoured, "generation_params / embedding_request: written in the request log line",
                 "", true},
    RequestField{"safety_identifier", false, true, kHonoured, "chat: written in the request log line, as user", ""},
    RequestField{"seed", true, true, kHonoured, "generation_params -> per-request generator", ""},
    RequestField{"tools", false, true, kHonoured, "chat template renders them; tool_call_parser reads the output", ""},
    RequestField{"tool_choice", false, true, kHonoured,
                 "tool_choice: auto, none, required and a named function (required/named/strict via the grammar)", ""},
    RequestField{"parallel_tool_calls", false, true, kHonoured, "chat_tools: false keeps the first call only", ""},
    RequestField{"functions", false, true, kRefused, "deprecated by OpenAI; send 'tools'", ""},
    RequestField{"function_call", false, true, kRefused, "deprecated by OpenAI; send 'tool_choice'", ""},
    RequestField{"store", false, true, kRefused, "this server stores no completions", "false"},
    RequestField{"metadata", false, true, kRefused, "only meaningful with store, which is not supported", "{}"},
    RequestField{"modalities", false, true, kRefused, "only text output is supported", "[\"text\"]"},
    RequestField{"audio", false, true, kRefused, "audio output is not supported", ""},
    RequestField{"prediction", false, true, kRefused, "predicted outputs are not supported", ""},
    RequestField{"reasoning_effort", false, true, kRefused,
                 "not supported; Qwen3-style models take chat_template_kwargs.enable_thinking", ""},
    RequestField{"service_tier", true, true, kRefused, "this server has one tier", "\"auto\"|\"default\""},
    RequestField{"web_search_options", false, true, kRefused, "web search is not supported", ""},
    RequestField{"verbosity", false, true, kRefused, "not supported", ""},
    RequestField{"prompt_cache_key", false, true, kRefused,
                 "not supported; prefix caching is automatic (cache_salt isolates tenants)", ""},
    RequestField{"prompt_cache_retention", false, true, kRefused, "not supported", ""},
    // vLLM and llama.cpp extensions this server honours.
    RequestField{"top_k", true, true, kHonoured, "generation_params -> sampler", ""},
    RequestField{"min_p", true, true, kHonoured, "generation_params -> sampler", ""},
    RequestField{"repetition_penalty", true, true, kHonoured, "generation_params -> logits_processors", ""},
    RequestField{"min_tokens", true, true, kHonoured, "generation_params -> logits_processors", ""},
    RequestField{"stop_token_ids", true, true, kHonoured, "generation_params -> engine stop check", ""},
    RequestField{"ignore_eos", true, true, kHonoured, "generation_params -> engine stop check", ""},
    RequestField{"include_stop_str_in_output", true, true, kHonoured,
                 "generation_params -> stop_checker: the matched stop string ends the output", ""},
    RequestField{"skip_special_tokens", true, true, kHonoured, "generation_params -> detokenizer", ""},
    RequestField{"speculative_decoding", true, true, kHonoured, "generation_params -> engine speculation (opt-out)", ""},
    RequestField{"prompt_logprobs", true, true, kHonoured, "generation_params -> engine prompt scoring", ""},
    RequestField{"cache_salt", true, true, kHonoured, "generation_params -> prefix cache isolation", ""},
    RequestField{"add_generation_prompt", false, true, kHonoured, "chat_prompt", ""},
    RequestField{"chat_template_kwargs", false, true, kHonoured, "chat_prompt: template variables (enable_thinking)", ""},
    // Read by parsers other parts of the server own; wired where their parsers land.
    RequestField{"response_format", true, true, kHonoured, "structured_output_request parser (constrained decoding)", ""},
    RequestField{"structured_outputs", true, true, kHonoured, "structured_output_request parser (vLLM's form)", ""},
    RequestField{"guided_json", true, true, kHonoured, "structured_output_request parser (vLLM's older form)", ""},
    RequestField{"guided_regex", true, true, kHonoured, "structured_output_request parser (vLLM's older form)", ""},
    RequestField{"guided_choice", true, true, kHonoured, "structured_output_request parser (vLLM's older form)", ""},
    RequestField{"guided_grammar", true, true, kHonoured, "structured_output_request parser (vLLM's older form)", ""},
    RequestField{"grammar", true, true, kHonoured, "structured_output_request parser (llama.cpp's GBNF field)", ""},
    RequestField{"json_schema", true, true, kHonoured, "structured_output_request parser (llama.cpp's field)", ""},
    RequestField{"priority", true, true, kHonoured, "slo_request: scheduling priority (SLO headers beside it)", ""},
    RequestField{"slo", true, true, kHonoured, "slo_request: per-request TTFT/TPOT targets", ""},
    RequestField{"semantic_cache", true, true, kHonoured, "semantic_cache_request: opts in to (or out of) the semantic cache",
                 ""},
    // POST /v1/embeddings (model and user above).
    RequestField{"input", false, false, kHonoured, "embedding_request: a string, ids, or a list of either", "", true},
    RequestField{"encoding_format", false, false, kHonoured, "embedding_request: float or base64", "", true},
    RequestField{"dimensions", false, false, kHonoured,
                 "embedding_request: only the model's own size (no Matryoshka truncation); others are a 400", "", true},
};

bool allowed_value(const RequestField& f, const Json& value) {
  if (value.is_null()) return true;
  std::string_view rest = f.allowed_json;
  while (!rest.empty()) {
    const size_t bar = rest.find('|');
    const std::string_view one = rest.substr(0, bar);
    if (Json::parse(one) == value) return true;
    if (bar == std::string_view::npos) break;
    rest.remove_prefix(bar + 1);
  }
  return false;
}

const char* route_path(RequestRoute route) {
  if (route == RequestRoute::kEmbeddings) return "/v1/embeddings";
  return route == RequestRoute::kChat ? "/v1/chat/completions" : "/v1/completions";
}

}  // namespace

std::span<const RequestField> request_fields() { return kFields; }

const RequestField* find_request_field(std::string_view name, RequestRoute route) {
  for (const RequestField& f : kFields) {
    if (f.name != name) continue;
    const bool known = route == RequestRoute::kChat ? f.chat : route == RequestRoute::kEmbeddings ? f.embeddings
                                                                                                  : f.completions;
    return known ? &f : nullptr;
  }
  return nullptr;
}

void check_request_fields(const Json& body, RequestRoute route) {
  for (const auto& [key, value] : body.items()) {
    const RequestField* f = find_request_field(key, route);
    if (!f) {
      throw bad_field(key, "unknown field '" + key + "': " + route_path(route) +
                               " does not support it (it would otherwise be ignored)");
    }
    if (f->use == FieldUse::kRefused && !allowed_value(*f, value)) {
      throw bad_field(key, "'" + key + "' is not supported: " + std::string(f->note));
    }
  }
}

}  // namespace loom
