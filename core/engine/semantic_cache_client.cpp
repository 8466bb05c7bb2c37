#include "core/engine/semantic_cache_client.hpp"

#include "core/common/error.hpp"
#include "core/common/logging.hpp"
#include "loom/sdk_core.hpp"
#include "loom/semantic_cache.h"

namespace loom {
namespace {

// The C view of a query; its strings point into `q`, which must outlive it.
loom_semantic_query c_query(const SemanticQuery& q) {
  loom_semantic_query c{};
  c.struct_size = sizeof(c);
  c.model = q.model.c_str();
  c.tenant = q.tenant.c_str();
  c.prompt = q.prompt.data();
  c.prompt_len = q.prompt.size();
  c.params = q.params.c_str();
  c.text = q.text.data();
  c.text_len = q.text.size();
  c.context = q.context.c_str();
  c.embedding = q.embedding.empty() ? nullptr : q.embedding.data();
  c.embedding_dim = static_cast<int32_t>(q.embedding.size());
  return c;
}

std::vector<double> similarity_bounds() {
  return {0.5, 0.6, 0.7, 0.8, 0.85, 0.9, 0.92, 0.94, 0.96, 0.98, 0.99, 0.995, 0.999, 1.0};
}

}  // namespace

SemanticCacheClient::SemanticCacheClient(const LoadedPlugin& plugin, SemanticCacheGuards guards)
    : plugin_(plugin), guards_(guards), similarity_(similarity_bounds()) {
  const auto& vt = plugin_.vtable<loom_semantic_cache_vtable>();
  needs_embedding_ = sdk::present(vt, &loom_semantic_cache_vtable::needs_embedding) && vt.needs_embedding(plugin_.self()) != 0;
}

std::optional<SemanticAnswer> SemanticCacheClient::lookup(const SemanticQuery& query) {
  const loom_semantic_query c = c_query(query);
  std::vector<char> buffer(4096);
  for (int attempt = 0; attempt < 2; ++attempt) {
    loom_semantic_answer a{};
    a.struct_size = sizeof(a);
    a.text = buffer.data();
    a.capacity = buffer.size();
    a.similarity = 1.0f;  // what a 1.0 plugin, which does not set it, means: exact
    int32_t hit = 0;
    std::string message;
    if (plugin_.try_call(&message, &loom_semantic_cache_vtable::lookup, &c, &hit, &a) != LOOM_OK) {
      LOOM_LOG_WARN("semantic_cache '{}': lookup failed, computing the answer: {}", plugin_.name(), message);
      errors_.fetch_add(1);
      misses_.fetch_add(1);
      return std::nullopt;
    }
    if (hit == 0) {
      misses_.fetch_add(1);
      return std::nullopt;
    }
    if (a.length > a.capacity) {  // the answer is longer: once more with room for it
      buffer.resize(a.length);
      continue;
    }
    hits_.fetch_add(1);
    similarity_.observe(a.similarity);
    return SemanticAnswer{std::string(buffer.data(), a.length), a.completion_tokens, a.finish_reason == 1,
                          a.similarity};
  }
  misses_.fetch_add(1);
  return std::nullopt;
}

void SemanticCacheClient::store(const SemanticQuery& query, const SemanticAnswer& answer) {
  const loom_semantic_query c = c_query(query);
  std::string text = answer.text;
  loom_semantic_answer a{};
  a.struct_size = sizeof(a);
  a.text = text.data();
  a.capacity = text.size();
  a.length = text.size();
  a.completion_tokens = answer.completion_tokens;
  a.finish_reason = answer.finished_by_length ? 1 : 0;
  a.similarity = 1.0f;
  std::string message;
  if (plugin_.try_call(&message, &loom_semantic_cache_vtable::store, &c, &a) != LOOM_OK) {
    LOOM_LOG_WARN("semantic_cache '{}': store failed: {}", plugin_.name(), message);
    errors_.fetch_add(1);
    return;
  }
  stores_.fetch_add(1);
}

std::unique_ptr<SemanticCacheClient> make_semantic_cache_client(const LoadedPlugin* plugin, const Config& config,
                                                                const EmbeddingWorker* embeddings) {
  if (plugin == nullptr) return nullptr;
  auto client = std::make_unique<SemanticCacheClient>(*plugin, config.semantic_guards);
  if (client->needs_embedding() && embeddings == nullptr)
    throw Error("semantic_cache '" + plugin->name() + "' compares sentence embeddings: configure an [embedding] model "
                "(or --embedding-model DIR)", LOOM_ERR_INVALID_ARGUMENT);
  LOOM_LOG_INFO("semantic cache '{}': {}{}", plugin->name(),
                config.semantic_guards.require_opt_in ? "for requests that opt in" : "for every eligible request",
                config.semantic_guards.deterministic_only ? ", deterministic ones only" : "");
  return client;
}

SemanticCacheSnapshot SemanticCacheClient::snapshot() const {
  SemanticCacheSnapshot s;
  s.enabled = true;
  s.hits = hits_.load();
  s.misses = misses_.load();
  s.stores = stores_.load();
  s.errors = errors_.load();
  s.similarity = similarity_.snapshot();
  const auto& vt = plugin_.vtable<loom_semantic_cache_vtable>();
  if (sdk::present(vt, &loom_semantic_cache_vtable::stats)) {
    loom_semantic_cache_stats st{};
    st.struct_size = sizeof(st);
    if (plugin_.try_call(nullptr, &loom_semantic_cache_vtable::stats, &st) == LOOM_OK) {
      s.entries = st.entries;
      s.evictions = st.evictions;
      s.expirations = st.expirations;
    }
  }
  return s;
}

}  // namespace loom
