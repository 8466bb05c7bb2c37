// The embedding cache's calibration set: a JSONL file of labelled question pairs,
//   {"a": "...", "b": "...", "same": true|false, "kind": "paraphrase|entity|..."}
// one object a line (blank lines skipped), embedded with the host's encoder (semantic_cache
// interface 1.2's callback) and checked by the key-term guard, ready for calibrate_threshold.
#pragma once

#include <string>
#include <vector>

#include "common/threshold_calibration.hpp"
#include "loom/semantic_cache.h"

namespace loom::semantic {

// Reads and embeds `path`; key_terms: run the guard (else every pair's guard_ok is true). Throws
// loom::sdk::Error naming the file and line of a bad line, or the embed failure.
std::vector<LabelledPair> embed_calibration_set(const std::string& path, const loom_semantic_cache_create_args& host,
                                                bool key_terms);

// The grid as text, one row a line: threshold, paraphrase hit rate, false hits / hits; the chosen
// row marked.
std::string calibration_table(const Calibration& c);

}  // namespace loom::semantic
