#include "calibration_set.hpp"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "common/key_terms.hpp"
#include "loom/sdk.hpp"

namespace loom::semantic {
namespace {

[[noreturn]] void fail(const std::string& what) {
  throw loom::sdk::Error(LOOM_ERR_INVALID_ARGUMENT, "semantic_cache embedding: calibration: " + what);
}

// Each distinct text is embedded once: the sets repeat a pair's `a`.
class Embedder {
 public:
  explicit Embedder(const loom_semantic_cache_create_args& host) : host_(host) {}
  const std::vector<float>& operator()(const std::string& text) {
    auto [it, fresh] = cache_.try_emplace(text);
    if (!fresh) return it->second;
    it->second.resize(static_cast<size_t>(host_.embedding_dim));
    char message[512] = {};
    loom_error_buf err{message, sizeof(message)};
    if (host_.embed(host_.embed_ctx, text.data(), text.size(), it->second.data(), &err) != LOOM_OK)
      fail("embedding \"" + text + "\": " + message);
    return it->second;
  }

 private:
  const loom_semantic_cache_create_args& host_;
  std::unordered_map<std::string, std::vector<float>> cache_;
};

}  // namespace

std::vector<LabelledPair> embed_calibration_set(const std::string& path, const loom_semantic_cache_create_args& host,
                                                bool key_terms) {
  if (host.embed == nullptr || host.embedding_dim <= 0)
    fail("the server has no [embedding] model to embed " + path + " with");
  std::ifstream in(path);
  if (!in) fail("cannot read " + path);
  Embedder embed(host);
  std::vector<LabelledPair> pairs;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const std::string at = path + ":" + std::to_string(n) + ": ";
    const nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!j.is_object() || !j.contains("a") || !j["a"].is_string() || !j.contains("b") || !j["b"].is_string() ||
        !j.contains("same") || !j["same"].is_boolean())
      fail(at + "expected {\"a\": text, \"b\": text, \"same\": true|false}");
    const std::string a = j["a"], b = j["b"];
    const std::vector<float>& va = embed(a);
    const std::vector<float>& vb = embed(b);
    double dot = 0;
    for (size_t i = 0; i < va.size(); ++i) dot += static_cast<double>(va[i]) * vb[i];
    LabelledPair p;
    p.cosine = dot;
    p.same = j["same"];
    p.guard_ok = !key_terms || key_terms_conflict(key_terms_of(a), key_terms_of(b)) == KeyTermConflict::kNone;
    pairs.push_back(p);
  }
  if (pairs.empty()) fail(path + " holds no pairs");
  return pairs;
}

std::string calibration_table(const Calibration& c) {
  std::string out = "threshold  same-pair hit rate  false hits / hits";
  for (const CalibrationRow& r : c.rows) {
    const bool chosen = c.threshold && std::abs(*c.threshold - r.threshold) < 1e-9;
    char row[128];
    std::snprintf(row, sizeof(row), "\n  %.2f     %5.1f%% (%3lld/%lld)     %3lld/%lld%s", r.threshold,
                  100.0 * r.same_hit_rate(), static_cast<long long>(r.hits - r.false_hits),
                  static_cast<long long>(r.same_pairs), static_cast<long long>(r.false_hits),
                  static_cast<long long>(r.hits), chosen ? "  <-" : "");
    out += row;
  }
  return out;
}

}  // namespace loom::semantic
