// The embedding cache's calibration through the real plugin host (semantic_cache interface 1.2):
// create() embeds tests/data/semantic/calibration_fixture.jsonl with the host's embed callback
// (here a table: every `a` at e0, every `b` at its listed cosine to e0) and takes the lowest
// threshold on 0.70..0.99 whose false hits are at most target_false_hit_rate of hits. The
// fixture's near misses: a swap at 0.955 and a number change at 0.805 (both refused by the
// key-term guard) and an added qualifier at 0.885 (a false hit): 0.89 with the guard, 0.96
// without it, 0.70 at a target of 1/3 (cosines off the grid, clear of float rounding). The chosen
// threshold is read back through lookups just above and below it. An explicit threshold beside a
// calibration set is refused naming both.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>

#include "core/common/thread_pool.hpp"
#include "core/engine/semantic_cache_client.hpp"
#include "loom/semantic_cache.h"
#include "core/common/error.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom {
namespace {

constexpr int kDim = 8;
const std::string kFixture = std::string(LOOM_TEST_DATA) + "/semantic/calibration_fixture.jsonl";

std::vector<float> at_cosine(double c) {
  std::vector<float> v(kDim, 0.0f);
  v[0] = static_cast<float>(c);
  v[1] = static_cast<float>(std::sqrt(1.0 - c * c));
  return v;
}

// The fixture's texts: each `b` at its cosine to the `a`s, which sit at e0.
const std::map<std::string, double>& cosines() {
  static const std::map<std::string, double> m = {
      {"How can I boil an egg?", 0.975},       {"Which city is the capital of France?", 0.915},
      {"What is the way to bake bread?", 0.855}, {"How do I reset my modem?", 0.955},
      {"What is a normal heart rate for a child?", 0.885}, {"What is 25 percent of 80?", 0.805}};
  return m;
}

loom_status fake_embed(void* ctx, const char* text, size_t len, float* out, loom_error_buf*) {
  ++*static_cast<int*>(ctx);
  const auto it = cosines().find(std::string(text, len));
  const std::vector<float> v = at_cosine(it == cosines().end() ? 1.0 : it->second);
  std::copy(v.begin(), v.end(), out);
  return LOOM_OK;
}

class SemanticCalibration : public ::testing::Test {
 protected:
  std::unique_ptr<LoadedPlugin> open(const std::string& config, bool with_encoder = true) {
    loom_semantic_cache_create_args args{};
    args.struct_size = sizeof(args);
    if (with_encoder) {
      args.embedding_dim = kDim;
      args.embed = &fake_embed;
      args.embed_ctx = &embeds_;
    }
    return host_.create(PluginSpec{LOOM_KIND_SEMANTIC_CACHE, "embedding", "", config}, &args);
  }
  // Whether a question at `cosine` to a stored one hits (the texts agree on their key terms).
  static bool hits_at(SemanticCacheClient& c, double cosine) {
    SemanticQuery q;
    q.model = "m";
    q.params = R"({"temperature":0.0})";
    q.text = "How long should I boil an egg?";
    q.embedding = at_cosine(1.0);
    c.store(q, SemanticAnswer{"Six minutes.", 3, false, 1.0f});
    q.text = "How long do I boil an egg?";
    q.embedding = at_cosine(cosine);
    return c.lookup(q).has_value();
  }
  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  int embeds_ = 0;
};

TEST_F(SemanticCalibration, PicksTheLowestThresholdWithinTheTarget) {
  const auto plugin = open(R"({"calibration": ")" + kFixture + R"("})");
  EXPECT_EQ(embeds_, 12) << "each distinct text once";
  SemanticCacheClient c(*plugin, SemanticCacheGuards{});
  EXPECT_TRUE(hits_at(c, 0.8905));
  EXPECT_FALSE(hits_at(c, 0.8895));
}

TEST_F(SemanticCalibration, WithoutTheGuardTheSwapIsAFalseHitToo) {
  const auto plugin = open(R"({"calibration": ")" + kFixture + R"(", "key_terms": false})");
  SemanticCacheClient c(*plugin, SemanticCacheGuards{});
  EXPECT_TRUE(hits_at(c, 0.9605));
  EXPECT_FALSE(hits_at(c, 0.9595));
}

TEST_F(SemanticCalibration, ALooserTargetTakesTheLowestRow) {
  const auto plugin = open(R"({"calibration": ")" + kFixture + R"(", "target_false_hit_rate": 0.34})");
  SemanticCacheClient c(*plugin, SemanticCacheGuards{});
  EXPECT_TRUE(hits_at(c, 0.7005));
  EXPECT_FALSE(hits_at(c, 0.6995));
}

TEST_F(SemanticCalibration, TheDefaultThresholdWithoutASet) {
  const auto plugin = open("{}");
  SemanticCacheClient c(*plugin, SemanticCacheGuards{});
  EXPECT_TRUE(hits_at(c, 0.9605));
  EXPECT_FALSE(hits_at(c, 0.9595));
  EXPECT_EQ(embeds_, 0);
}

TEST_F(SemanticCalibration, AThresholdBesideACalibrationSetIsRefusedNamingBoth) {
  try {
    open(R"({"threshold": 0.9, "calibration": ")" + kFixture + R"("})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"threshold\" and \"calibration\" both given"), std::string::npos) << m;
  }
}

TEST_F(SemanticCalibration, ATargetWithoutACalibrationSetIsRefused) {
  try {
    open(R"({"target_false_hit_rate": 0.05})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("\"target_false_hit_rate\" is read only with \"calibration\""), std::string::npos) << m;
  }
}

TEST_F(SemanticCalibration, ACalibrationSetNeedsTheHostsEncoder) {
  try {
    open(R"({"calibration": ")" + kFixture + R"("})", /*with_encoder=*/false);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("the server has no [embedding] model"), std::string::npos) << e.what();
  }
}

TEST_F(SemanticCalibration, ABadLineIsRefusedWithItsNumber) {
  const std::string bad = ::testing::TempDir() + "loom-semantic-bad.jsonl";
  {
    std::ofstream out(bad);
    out << R"({"a": "x", "b": "y", "same": true})" << "\n" << R"({"a": "x", "same": true})" << "\n";
  }
  try {
    open(R"({"calibration": ")" + bad + R"("})");
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(bad + ":2: expected"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom
