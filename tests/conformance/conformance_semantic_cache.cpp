// Semantic-cache conformance: every semantic_cache plugin through the host's client
// (SemanticCacheClient), on the same scripted queries. An exact repeat is always a hit with the
// stored answer, whatever its length; a query that differs in model, tenant, parameters
// (temperature, seed, tools) or context is never a hit, even with the same embedding; capacity
// evicts the least recently used answer; a TTL expires answers; a bad config names the key. A
// plugin that compares embeddings (needs_embedding) must also hit a near question above its
// threshold, with the cosine as similarity, and miss below it.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "core/common/thread_pool.hpp"
#include "core/engine/semantic_cache_client.hpp"
#include "tests/conformance/conformance_support.hpp"

namespace loom {
namespace {

constexpr int kDim = 8;

// A unit vector at cosine `c` to e0 (in the plane of e0 and e1).
std::vector<float> at_cosine(double c) {
  std::vector<float> v(kDim, 0.0f);
  v[0] = static_cast<float>(c);
  v[1] = static_cast<float>(std::sqrt(1.0 - c * c));
  return v;
}

SemanticQuery base_query() {
  SemanticQuery q;
  q.model = "m";
  q.tenant = "tenant=a;salt=";
  q.prompt = "1,15043,29892";
  q.params = R"({"temperature":0.0})";
  q.text = "What is the capital of France?";
  q.context = "ctx";
  q.embedding = at_cosine(1.0);
  return q;
}

class SemanticCacheConformance : public ::testing::TestWithParam<std::string> {
 protected:
  std::unique_ptr<SemanticCacheClient> open(const std::string& config = "{}") {
    plugin_ = conformance::create_or_skip(host_, LOOM_KIND_SEMANTIC_CACHE, GetParam(), &args_, &skip_, config);
    if (!plugin_) return nullptr;
    return std::make_unique<SemanticCacheClient>(*plugin_, SemanticCacheGuards{});
  }
  ThreadPool threads_{1};
  PluginHost host_{threads_, {}};
  loom_semantic_cache_create_args args_{sizeof(loom_semantic_cache_create_args), 0, nullptr, nullptr};  // no encoder
  std::unique_ptr<LoadedPlugin> plugin_;
  std::string skip_;
};

const SemanticAnswer kAnswer{"Paris.", 3, false, 1.0f};

TEST_P(SemanticCacheConformance, AnExactRepeatIsAlwaysAHit) {
  auto c = open();
  if (!c) GTEST_SKIP() << skip_;
  const SemanticQuery q = base_query();
  EXPECT_FALSE(c->lookup(q)) << "an empty cache hits";
  c->store(q, kAnswer);
  for (int i = 0; i < 5; ++i) {
    const auto hit = c->lookup(q);
    ASSERT_TRUE(hit) << "repeat " << i;
    EXPECT_EQ(hit->text, "Paris.");
    EXPECT_EQ(hit->completion_tokens, 3);
    EXPECT_FALSE(hit->finished_by_length);
    EXPECT_FLOAT_EQ(hit->similarity, 1.0f);
  }
  const SemanticCacheSnapshot s = c->snapshot();
  EXPECT_EQ(s.hits, 5);
  EXPECT_EQ(s.misses, 1);
  EXPECT_EQ(s.stores, 1);
  EXPECT_EQ(s.entries, 1);
  EXPECT_EQ(s.similarity.count, 5u);
}

TEST_P(SemanticCacheConformance, NeverAcrossModelsTenantsParametersOrContexts) {
  auto c = open();
  if (!c) GTEST_SKIP() << skip_;
  c->store(base_query(), kAnswer);
  // Each differs in one identity field only: same prompt, same text, same embedding.
  const std::vector<std::pair<const char*, void (*)(SemanticQuery&)>> variants = {
      {"model", [](SemanticQuery& q) { q.model = "other"; }},
      {"tenant", [](SemanticQuery& q) { q.tenant = "tenant=b;salt="; }},
      {"no tenant", [](SemanticQuery& q) { q.tenant = ""; }},
      {"cache salt", [](SemanticQuery& q) { q.tenant = "tenant=a;salt=s"; }},
      {"temperature", [](SemanticQuery& q) { q.params = R"({"temperature":0.7})"; }},
      {"seed", [](SemanticQuery& q) { q.params = R"({"seed":1,"temperature":0.0})"; }},
      {"tools", [](SemanticQuery& q) { q.params = R"({"temperature":0.0,"tools":[{"type":"function"}]})"; }},
      {"context", [](SemanticQuery& q) { q.context = "other turns"; }},
  };
  for (const auto& [what, change] : variants) {
    SemanticQuery q = base_query();
    change(q);
    EXPECT_FALSE(c->lookup(q)) << "a different " << what << " hit";
  }
  EXPECT_TRUE(c->lookup(base_query()));
}

TEST_P(SemanticCacheConformance, ALongAnswerComesBackWhole) {
  auto c = open();
  if (!c) GTEST_SKIP() << skip_;
  std::string text;
  for (int i = 0; i < 3000; ++i) text += "word" + std::to_string(i) + " ";  // > the host's first 4 KiB buffer
  c->store(base_query(), SemanticAnswer{text, 3000, true, 1.0f});
  const auto hit = c->lookup(base_query());
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->text, text);
  EXPECT_TRUE(hit->finished_by_length);
}

TEST_P(SemanticCacheConformance, CapacityEvictsTheLeastRecentlyUsed) {
  auto c = open(R"({"capacity": 2})");
  if (!c) GTEST_SKIP() << skip_;
  auto q = [](int i) {
    SemanticQuery s = base_query();
    s.context = "conversation " + std::to_string(i);  // three identities, so the embedding plugin keeps all
    return s;
  };
  c->store(q(1), kAnswer);
  c->store(q(2), kAnswer);
  ASSERT_TRUE(c->lookup(q(1)));  // 1 is now more recent than 2
  c->store(q(3), kAnswer);
  EXPECT_TRUE(c->lookup(q(1)));
  EXPECT_FALSE(c->lookup(q(2)));
  EXPECT_TRUE(c->lookup(q(3)));
  const SemanticCacheSnapshot s = c->snapshot();
  EXPECT_EQ(s.entries, 2);
  EXPECT_EQ(s.evictions, 1);
}

TEST_P(SemanticCacheConformance, AnswersExpireAfterTheirTtl) {
  auto c = open(R"({"ttl_s": 0.05})");
  if (!c) GTEST_SKIP() << skip_;
  c->store(base_query(), kAnswer);
  EXPECT_TRUE(c->lookup(base_query()));
  std::this_thread::sleep_for(std::chrono::milliseconds(120));
  EXPECT_FALSE(c->lookup(base_query()));
  EXPECT_EQ(c->snapshot().expirations, 1);
  EXPECT_EQ(c->snapshot().entries, 0);
}

TEST_P(SemanticCacheConformance, NearQuestionsHitAboveTheThresholdOnly) {
  auto c = open();  // the embedding plugin's default threshold, 0.96
  if (!c) GTEST_SKIP() << skip_;
  c->store(base_query(), kAnswer);
  SemanticQuery near = base_query();
  near.text = "What's the capital of France?";
  near.prompt = "1,1724,29892";
  near.embedding = at_cosine(0.99);
  SemanticQuery far = near;
  far.text = "What is the capital of Peru?";
  far.embedding = at_cosine(0.90);
  if (!c->needs_embedding()) {
    // An exact cache: any other prompt is another request.
    EXPECT_FALSE(c->lookup(near));
    EXPECT_FALSE(c->lookup(far));
    return;
  }
  const auto hit = c->lookup(near);
  ASSERT_TRUE(hit);
  EXPECT_EQ(hit->text, "Paris.");
  EXPECT_NEAR(hit->similarity, 0.99, 1e-5);
  EXPECT_FALSE(c->lookup(far));
}

TEST_P(SemanticCacheConformance, ABadConfigIsRefusedNamingEveryKey) {
  std::string skip;
  try {
    host_.create(PluginSpec{LOOM_KIND_SEMANTIC_CACHE, GetParam(), "", R"({"capacity": 0, "colour": "red"})"}, &args_);
    ADD_FAILURE() << "accepted";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("capacity"), std::string::npos) << m;
    EXPECT_NE(m.find("colour"), std::string::npos) << m;
  }
}

INSTANTIATE_TEST_SUITE_P(AllSemanticCachePlugins, SemanticCacheConformance,
                         ::testing::ValuesIn(conformance::plugin_names()),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace loom
