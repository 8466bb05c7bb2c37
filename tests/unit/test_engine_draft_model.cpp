// The host's draft models (speculator interface 1.1): a sequence's logits do not depend on the
// others in its step, a rollback (keep) gives bit for bit the logits of computing the kept tokens
// and the new ones afresh, a sequence that does not fit is dropped while the rest run, every
// block comes back, and the service refuses a draft whose vocabulary is not the target's, naming
// the token, and options it does not know. The demo model (stories260K) in f32 with f32 KV.
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/thread_pool.hpp"
#include "core/engine/draft_model.hpp"
#include "core/engine/draft_model_service.hpp"
#include "core/plugin/plugin_host.hpp"

namespace loom {
namespace {

const std::string kDemo = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";

DraftModelOptions exact(int64_t kv_tokens = 4096) {
  DraftModelOptions o;
  o.quantization = PluginSpec{LOOM_KIND_QUANTIZATION, "none", "", "{}"};
  o.kv_dtype = LOOM_DTYPE_F32;
  o.kv_tokens = kv_tokens;
  return o;
}

std::vector<int32_t> ids(int32_t n, int32_t salt) {
  std::vector<int32_t> out;
  for (int32_t i = 0; i < n; ++i) out.push_back(3 + (i * 37 + salt * 101) % 500);
  return out;
}

class DraftModelTest : public ::testing::Test {
 protected:
  // Logits of each sequence's last token: [seqs, vocab].
  std::vector<float> run(DraftModel& m, const std::vector<loom_draft_seq>& seqs, std::vector<int32_t>* ok = nullptr) {
    std::vector<float> logits(seqs.size() * static_cast<size_t>(m.vocab_size()), -1.0f);
    std::vector<int32_t> oks(seqs.size(), -1);
    m.forward(seqs, m.vocab_size(), logits.data(), oks.data());
    if (ok != nullptr) *ok = oks;
    else
      for (int32_t o : oks) EXPECT_EQ(o, 1);
    return logits;
  }
  std::vector<float> row(const std::vector<float>& all, size_t i, int32_t vocab) {
    return {all.begin() + static_cast<ptrdiff_t>(i * vocab), all.begin() + static_cast<ptrdiff_t>((i + 1) * vocab)};
  }

  ThreadPool threads_{2};
  PluginHost host_{threads_, {}};
};

TEST_F(DraftModelTest, BatchedSequencesEqualEachAlone) {
  DraftModel together(kDemo, exact(), host_, threads_);
  DraftModel alone(kDemo, exact(), host_, threads_);
  const int32_t v = together.vocab_size();
  const std::vector<int32_t> a = ids(23, 1), b = ids(5, 2), c = ids(40, 3);
  const std::vector<float> all = run(together, {{1, 0, a.data(), 23}, {2, 0, b.data(), 5}, {3, 0, c.data(), 40}});
  EXPECT_EQ(row(all, 0, v), run(alone, {{7, 0, a.data(), 23}}));
  EXPECT_EQ(row(all, 1, v), run(alone, {{8, 0, b.data(), 5}}));
  EXPECT_EQ(row(all, 2, v), run(alone, {{9, 0, c.data(), 40}}));
  EXPECT_EQ(together.length(1), 23);
  EXPECT_EQ(together.length(3), 40);
  // One token at a time after the prompt, as drafting does, equals the prompt in one step.
  const std::vector<int32_t> longer = ids(24, 1);
  const std::vector<float> next = run(together, {{1, 23, longer.data() + 23, 1}});
  EXPECT_EQ(next, run(alone, {{10, 0, longer.data(), 24}}));
}

TEST_F(DraftModelTest, KeepRollsBackExactly) {
  DraftModel m(kDemo, exact(), host_, threads_);
  const int32_t v = m.vocab_size();
  const std::vector<int32_t> first = ids(37, 4);  // crosses two block boundaries
  run(m, {{5, 0, first.data(), 37}});
  const int32_t free_before = m.free_blocks();
  // Keep 18 positions (block 1 partly), then append 6 other tokens.
  std::vector<int32_t> fresh(first.begin(), first.begin() + 18);
  const std::vector<int32_t> tail = ids(6, 9);
  fresh.insert(fresh.end(), tail.begin(), tail.end());
  const std::vector<float> rolled = run(m, {{5, 18, tail.data(), 6}});
  EXPECT_EQ(m.length(5), 24);
  EXPECT_EQ(m.free_blocks(), free_before + 1) << "the third block went back";
  EXPECT_EQ(rolled, row(run(m, {{6, 0, fresh.data(), 24}}), 0, v));
  // keep = 0 recomputes from nothing.
  EXPECT_EQ(run(m, {{5, 0, fresh.data(), 24}}), run(m, {{6, 0, fresh.data(), 24}}));
}

TEST_F(DraftModelTest, SequenceThatDoesNotFitIsDroppedAndTheOthersRun) {
  DraftModel m(kDemo, exact(64), host_, threads_);  // 4 blocks of 16
  DraftModel reference(kDemo, exact(), host_, threads_);
  const int32_t v = m.vocab_size();
  const std::vector<int32_t> small = ids(20, 1), big = ids(50, 2);
  std::vector<int32_t> ok;
  const std::vector<float> out = run(m, {{1, 0, small.data(), 20}, {2, 0, big.data(), 50}}, &ok);
  EXPECT_EQ(ok, (std::vector<int32_t>{1, 0}));
  EXPECT_EQ(row(out, 0, v), run(reference, {{1, 0, small.data(), 20}}));
  EXPECT_EQ(m.length(2), 0);
  EXPECT_EQ(m.num_seqs(), 1);
  EXPECT_EQ(m.free_blocks(), 2);
  m.release(1);
  m.release(99);  // unknown: ignored
  EXPECT_EQ(m.free_blocks(), 4);
  EXPECT_EQ(m.num_seqs(), 0);
}

TEST_F(DraftModelTest, BadCallsChangeNothing) {
  DraftModel m(kDemo, exact(), host_, threads_);
  const std::vector<int32_t> a = ids(10, 1);
  run(m, {{1, 0, a.data(), 10}});
  std::vector<float> logits(2 * static_cast<size_t>(m.vocab_size()));
  std::vector<int32_t> ok(2);
  const std::vector<loom_draft_seq> beyond = {{1, 11, a.data(), 1}};
  EXPECT_THROW(m.forward(beyond, m.vocab_size(), logits.data(), ok.data()), Error);
  const int32_t bad_id[] = {100000};
  const std::vector<loom_draft_seq> outside = {{1, 10, bad_id, 1}};
  EXPECT_THROW(m.forward(outside, m.vocab_size(), logits.data(), ok.data()), Error);
  const std::vector<loom_draft_seq> twice = {{3, 0, a.data(), 2}, {3, 0, a.data(), 2}};
  EXPECT_THROW(m.forward(twice, m.vocab_size(), logits.data(), ok.data()), Error);
  EXPECT_EQ(m.length(1), 10);
  EXPECT_EQ(m.num_seqs(), 1);
}

TEST_F(DraftModelTest, ServiceRefusesAnotherVocabularyAndUnknownOptions) {
  const std::unique_ptr<ModelSource> target = ModelSource::open(kDemo);
  const std::unique_ptr<Tokenizer> tokenizer = target->load_tokenizer();
  DraftModelService service(host_, threads_, *tokenizer, PluginSpec{LOOM_KIND_ATTENTION, "naive", "", "{}"},
                            LOOM_DTYPE_F32);
  const loom_draft_model_api* api = service.api();
  char message[512] = "";
  loom_error_buf err{message, sizeof message};
  void* model = nullptr;
  const std::string qwen = std::string(LOOM_TEST_DATA) + "/hf/qwen3";
  EXPECT_EQ(api->open(api->ctx, qwen.c_str(), "{}", &model, &err), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(message).find("does not share the target's tokenizer"), std::string::npos) << message;
  EXPECT_EQ(api->open(api->ctx, kDemo.c_str(), R"({"kv_tokens": 64, "colour": 1})", &model, &err), LOOM_ERR_CONFIG);
  EXPECT_NE(std::string(message).find("\"colour\""), std::string::npos) << message;
  EXPECT_EQ(api->open(api->ctx, kDemo.c_str(), R"({"kv_dtype": "f7"})", &model, &err), LOOM_ERR_CONFIG);
  // Through the C API as the plugin calls it: the same file opens and runs.
  ASSERT_EQ(api->open(api->ctx, kDemo.c_str(), R"({"quantization": "none", "kv_dtype": "f32"})", &model, &err),
            LOOM_OK)
      << message;
  const std::vector<int32_t> a = ids(12, 5);
  const loom_draft_seq seq{4, 0, a.data(), 12};
  std::vector<float> logits(static_cast<size_t>(tokenizer->vocab_size()));
  int32_t ok = 0;
  ASSERT_EQ(api->forward(api->ctx, model, &seq, 1, logits.data(), &ok, &err), LOOM_OK) << message;
  EXPECT_EQ(ok, 1);
  DraftModel direct(kDemo, exact(), host_, threads_);
  EXPECT_EQ(logits, run(direct, {{4, 0, a.data(), 12}}));
  const loom_draft_seq beyond{4, 40, a.data(), 1};
  EXPECT_EQ(api->forward(api->ctx, model, &beyond, 1, logits.data(), &ok, &err), LOOM_ERR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(message).find("keep 40"), std::string::npos) << message;
  api->release(api->ctx, model, 4);
  api->close(api->ctx, model);
}

}  // namespace
}  // namespace loom
