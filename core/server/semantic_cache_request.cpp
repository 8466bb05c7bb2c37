#include "core/server/semantic_cache_request.hpp"

#include <cstdio>

#include "core/engine/embedding_worker.hpp"
#include "core/engine/semantic_cache_embed.hpp"
#include "core/server/api_error.hpp"
#include "core/server/semantic_cache_engines.hpp"

namespace loom {
namespace {

constexpr const char* kHeader = "x-loom-semantic-cache";

// Fields that never change the answer: the prompt itself (the query carries its tokens), how it
// is delivered, who asked (the tenant is its own member), scheduling, and the opt-in.
constexpr const char* kNotAnswerFields[] = {"messages", "prompt", "stream", "stream_options", "user",
                                            "safety_identifier", "model", "priority", "slo", "semantic_cache"};

std::string header_value(const HttpRequest& http, std::string_view name) {
  const auto it = http.find(boost::beast::string_view(name.data(), name.size()));
  return it == http.end() ? std::string() : std::string(it->value().data(), it->value().size());
}

std::string hex_digest(std::string_view text) {  // FNV-1a 64: equal contexts, equal digests
  uint64_t h = 1469598103934665603ULL;
  for (const unsigned char c : text) h = (h ^ c) * 1099511628211ULL;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return std::string(buf) + ":" + std::to_string(text.size());
}

// The request's own words on the cache: true, false, or unsaid.
std::optional<bool> asked(const HttpRequest& http, const Json& body) {
  const std::string h = header_value(http, kHeader);
  if (h == "on" || h == "1" || h == "true") return true;
  if (h == "off" || h == "0" || h == "false") return false;
  if (!h.empty())
    throw ApiError(400, std::string("header ") + kHeader + ": \"" + h + "\" is not on or off", kHeader);
  return read_bool(body, "semantic_cache", "semantic_cache");
}

// Why a request that asked cannot use the cache; "" when it can.
std::string ineligible(const SemanticCacheGuards& guards, const SemanticCacheInputs& in) {
  const SamplingParams& s = in.request.sampling;
  if (guards.deterministic_only && s.temperature != 0.0f && !s.seed) return "not deterministic (temperature > 0, no seed)";
  if (in.num_prompts != 1) return "several prompts";
  if (in.params.n != 1 || in.params.best_of != 1) return "n or best_of > 1";
  if (s.logprobs || s.prompt_logprobs || in.echo_or_prompt_logprobs) return "logprobs or echo";
  return "";
}

std::string canonical_params(const SemanticCacheInputs& in, const char* route) {
  Json p = in.body;
  for (const char* f : kNotAnswerFields) p.erase(f);
  const SamplingParams& s = in.request.sampling;
  // The effective values too, so defaults the body leaves out are part of the identity.
  p["~route"] = route;
  p["~effective"] = Json{{"temperature", s.temperature}, {"top_p", s.top_p},     {"top_k", s.top_k},
                         {"min_p", s.min_p},             {"max_tokens", s.max_tokens},
                         {"seed", s.seed ? Json(*s.seed) : Json(nullptr)},   {"ignore_eos", s.ignore_eos},
                         {"stop", s.stop},               {"skip_special_tokens", s.skip_special_tokens},
                         {"include_stop_str_in_output", s.include_stop_str_in_output}};
  return p.dump();  // nlohmann objects keep keys sorted: one text per set of values
}

}  // namespace

std::optional<SemanticQuery> semantic_query_for(const ApiContext& api, const HttpRequest& http,
                                                const SemanticCacheInputs& in, std::string* skipped) {
  SemanticCacheClient* cache = api.engine.semantic_cache();
  const std::optional<bool> wants = asked(http, in.body);
  if (cache == nullptr) {
    if (wants.value_or(false))
      throw bad_field("semantic_cache", "this server has no semantic cache (configure a [semantic_cache] table)");
    return std::nullopt;
  }
  if (wants == false || (!wants && cache->guards().require_opt_in)) return std::nullopt;
  if (std::string why = ineligible(cache->guards(), in); !why.empty()) {
    *skipped = "skip; " + why;
    return std::nullopt;
  }
  SemanticQuery q;
  q.model = api.engine.model_info().name;
  std::string tenant = header_value(http, "x-gateway-inference-fairness-id");
  if (tenant.empty()) tenant = in.params.user.value_or("");
  const std::string salt = in.body.contains("cache_salt") && in.body["cache_salt"].is_string()
                               ? in.body["cache_salt"].get<std::string>()
                               : std::string();
  q.tenant = tenant.empty() && salt.empty() ? "" : "tenant=" + tenant + ";salt=" + salt;
  for (size_t i = 0; i < in.request.prompt.size(); ++i)
    q.prompt += (i ? "," : "") + std::to_string(in.request.prompt[i]);
  q.params = canonical_params(in, in.body.contains("messages") ? "chat" : "completions");
  q.text = in.text;
  q.context = hex_digest(in.context);
  if (cache->needs_embedding()) {
    // Only the cache's question is cut to the encoder's length; the prompt tokens stay exact.
    EmbeddingResult e = embed_question(*api.engine.embeddings(), q.text);
    if (!e.error.empty()) {
      *skipped = "skip; embedding failed";
      return std::nullopt;
    }
    q.embedding = std::move(e.vectors);
  }
  return q;
}

void start_generation(const std::shared_ptr<HttpExchange>& exchange, const ApiContext& api, StreamSettings settings,
                      std::vector<GenerateRequest> requests, std::optional<SemanticQuery> query,
                      const std::string& skipped) {
  SemanticCacheClient* cache = api.engine.semantic_cache();
  if (!query || cache == nullptr) {
    if (!skipped.empty()) exchange->add_header(kHeader, skipped);
    GenerationStream::start(exchange, api.engine, std::move(settings), std::move(requests));
    return;
  }
  if (std::optional<SemanticAnswer> hit = cache->lookup(*query)) {
    exchange->add_header(kHeader, "hit");
    settings.meta.semantic_similarity = hit->similarity;
    auto replay = std::make_shared<CachedAnswerEngine>(api.engine, std::move(*hit));
    exchange->hold(replay);
    GenerationStream::start(exchange, *replay, std::move(settings), std::move(requests));
    return;
  }
  exchange->add_header(kHeader, "miss");
  auto storing = std::make_shared<StoringEngine>(api.engine, *cache, std::move(*query));
  exchange->hold(storing);
  GenerationStream::start(exchange, *storing, std::move(settings), std::move(requests));
}

}  // namespace loom
