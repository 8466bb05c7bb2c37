// The [embedding] table (EmbeddingConfig) and the server's guard keys of [semantic_cache]
// (SemanticCacheGuards): read with positions, checked when built in code, written back for
// --print-config. One file so the three stay in step.
#pragma once

#include <filesystem>
#include <string>

#include "core/config/config.hpp"
#include "core/config/toml_reader.hpp"

namespace loom::config_detail {

// Reads every [embedding] key (paths relative to base_dir); problems are recorded.
void read_embedding(TableReader& t, const std::filesystem::path& base_dir, EmbeddingConfig& embedding);
// [semantic_cache] opt_in and deterministic_only (the rest of the table is the plugin's).
void read_semantic_guards(const toml::table& table, Problems& problems, SemanticCacheGuards& guards);
void check_embedding(Problems& problems, const EmbeddingConfig& embedding);
// "[embedding]\n..." when a path is set, else "".
std::string embedding_toml(const EmbeddingConfig& embedding);
// The guard lines to append under the [semantic_cache] header.
std::string semantic_guards_toml(const SemanticCacheGuards& guards);

}  // namespace loom::config_detail
