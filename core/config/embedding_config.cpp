#include "core/config/embedding_config.hpp"

#include <limits>

#include "core/config/toml_json.hpp"

namespace loom::config_detail {
namespace {

constexpr int64_t kMaxBatchTokens = 1 << 20;

}  // namespace

void read_embedding(TableReader& t, const std::filesystem::path& base_dir, EmbeddingConfig& embedding) {
  if (auto path = t.string("path", false)) {
    const std::filesystem::path p(*path);
    embedding.path = (p.is_absolute() ? p : std::filesystem::absolute(base_dir / p)).lexically_normal().string();
  }
  if (auto name = t.string("name", false)) embedding.name = *name;
  if (auto n = t.integer("max_batch_tokens", 1, kMaxBatchTokens)) embedding.max_batch_tokens = static_cast<int32_t>(*n);
}

void read_semantic_guards(const toml::table& table, Problems& problems, SemanticCacheGuards& guards) {
  for (const auto& [key, slot] : {std::pair{"opt_in", &guards.require_opt_in},
                                  std::pair{"deterministic_only", &guards.deterministic_only}}) {
    const toml::node* n = table.get(key);
    if (n == nullptr) continue;
    if (!n->is_boolean()) {
      problems.add(pos_of(n->source()), std::string("semantic_cache.") + key,
                   "expected a boolean, got " + type_name(n->type()));
      continue;
    }
    *slot = n->as_boolean()->get();
  }
}

void check_embedding(Problems& problems, const EmbeddingConfig& embedding) {
  if (embedding.max_batch_tokens < 1 || embedding.max_batch_tokens > kMaxBatchTokens)
    problems.add({}, "embedding.max_batch_tokens",
                 "must be in [1, " + std::to_string(kMaxBatchTokens) + "], got " +
                     std::to_string(embedding.max_batch_tokens));
}

std::string embedding_toml(const EmbeddingConfig& e) {
  if (e.path.empty()) return "";
  std::string out = "\n[embedding]\npath = " + toml_string(e.path) + "\n";
  if (!e.name.empty()) out += "name = " + toml_string(e.name) + "\n";
  return out + "max_batch_tokens = " + std::to_string(e.max_batch_tokens) + "\n";
}

std::string semantic_guards_toml(const SemanticCacheGuards& g) {
  return std::string("opt_in = ") + (g.require_opt_in ? "true" : "false") +
         "\ndeterministic_only = " + (g.deterministic_only ? "true" : "false") + "\n";
}

}  // namespace loom::config_detail
