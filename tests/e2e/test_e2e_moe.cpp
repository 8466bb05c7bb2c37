// loom-server on the tiny mixture-of-experts checkpoints of tests/data/hf/ (Mixtral, Qwen2-MoE,
// Qwen3-MoE, OLMoE; their tiny512 tokenizer): greedy requests in two bursts (expected.json's 3
// prompts, then each of them three times more, so a prefix cache with 4-token blocks has their
// blocks to reuse) must each give the 32 tokens
// transformers chose, as text through the model's tokenizer (invalid UTF-8 as U+FFFD), under continuous batching with the
// paged cache's prefix caching (flash_cpu), the radix cache (naive), and a pool so small that
// requests are preempted and recomputed. Afterwards every block and request is handed back.
#include <gtest/gtest.h>

#include <latch>
#include <nlohmann/json.hpp>
#include <thread>

#include "core/executor/hf_model.hpp"
#include "core/tokenizer/tokenizer_json.hpp"
#include "core/tokenizer/utf8.hpp"
#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

struct MoeCase {
  const char* name;
  const char* tables;          // [attention], [scheduler] and [cache]
  bool expect_prefix_hits;
  bool expect_preemptions;
};

constexpr const char* kArchs[] = {"mixtral", "qwen2_moe", "qwen3_moe", "olmoe"};
const MoeCase kCases[] = {
    {"continuous_pagedPrefix_flash",
     "[attention]\nplugin = \"flash_cpu\"\n[scheduler]\nplugin = \"continuous\"\nmax_num_batched_tokens = 64\n"
     "[cache]\nplugin = \"paged\"\nnum_blocks = 256\nblock_size = 4\nenable_prefix_caching = true\n"
     "check_invariants = true\n",
     true, false},
    {"continuous_radix_naive",
     "[attention]\nplugin = \"naive\"\n[scheduler]\nplugin = \"continuous\"\nmax_num_batched_tokens = 32\n"
     "[cache]\nplugin = \"radix\"\nkv_memory = \"4MiB\"\nblock_size = 4\ncheck_invariants = true\n",
     true, false},
    // 6 blocks of 16 tokens: a request (12 + 32 tokens) needs 3, so at most two run together.
    {"continuous_tinyPaged_preempts",
     "[attention]\nplugin = \"flash_cpu\"\n[scheduler]\nplugin = \"continuous\"\nmax_num_batched_tokens = 64\n"
     "[cache]\nplugin = \"paged\"\nnum_blocks = 6\nblock_size = 16\nenable_prefix_caching = true\n"
     "check_invariants = true\n",
     false, true},
};

class E2eMoe : public ::testing::TestWithParam<std::tuple<const char*, MoeCase>> {};

TEST_P(E2eMoe, ConcurrentGreedyRequestsGiveTheTransformersTokens) {
  const auto& [arch, c] = GetParam();
  const std::string dir = std::string(LOOM_TEST_DATA) + "/hf/" + arch;
  const json expected = read_json_file(dir + "/expected.json", false);
  const auto tok = load_tokenizer_json(dir);
  LiveServer server(demo_config(c.tables, dir));

  std::vector<std::vector<int32_t>> prompts, want;
  for (int copy = 0; copy < 4; ++copy) {
    for (const json& r : expected["results"]) {
      prompts.push_back(r["prompt"].get<std::vector<int32_t>>());
      want.emplace_back();
      for (const json& s : r["steps"]) want.back().push_back(s["token"].get<int32_t>());
    }
  }
  std::vector<std::string> got(prompts.size());
  auto burst = [&](size_t begin, size_t end) {
    std::latch ready(static_cast<std::ptrdiff_t>(end - begin));
    std::vector<std::thread> threads;
    for (size_t i = begin; i < end; ++i) {
      threads.emplace_back([&, i] {
        HttpTestClient client(server.port());
        ready.arrive_and_wait();  // all at once: the scheduler batches them
        const json request = {{"prompt", prompts[i]}, {"max_tokens", want[i].size()}, {"temperature", 0},
                              {"ignore_eos", true}};
        const HttpResponse r = client.post("/v1/completions", request.dump());
        got[i] = r.status == 200 ? json::parse(r.body)["choices"][0]["text"].get<std::string>()
                                 : "HTTP " + std::to_string(r.status) + ": " + r.body;
      });
    }
    for (auto& t : threads) t.join();
  };
  const size_t distinct = expected["results"].size();
  burst(0, distinct);
  burst(distinct, prompts.size());
  // The random weights pick byte tokens that do not form UTF-8; the server sends each invalid
  // sequence as U+FFFD.
  for (size_t i = 0; i < prompts.size(); ++i)
    EXPECT_EQ(got[i], utf8_sanitize(tok->decode(want[i]))) << arch << " request " << i;

  std::map<std::string, double> m;
  for (int tries = 0; tries < 100; ++tries) {  // the last request's blocks are freed after its reply
    m = server.metrics();
    if (m.at("loom:kv_cache_used_blocks") == 0 && m.at("loom:num_requests_running") == 0) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_EQ(m.at("loom:kv_cache_used_blocks"), 0);
  EXPECT_EQ(m.at("loom:num_requests_running"), 0);
  EXPECT_EQ(m.at("loom:request_success_total"), static_cast<double>(prompts.size()));
  if (c.expect_prefix_hits) {
    EXPECT_GT(m.at("loom:prefix_cache_hits_total"), 0) << "no prefix was shared";
  }
  if (c.expect_preemptions) {
    EXPECT_GT(m.at("loom:num_preemptions_total"), 0) << "the small pool never preempted";
  }
}

INSTANTIATE_TEST_SUITE_P(Moe, E2eMoe, ::testing::Combine(::testing::ValuesIn(kArchs), ::testing::ValuesIn(kCases)),
                         [](const auto& info) {
                           return std::string(std::get<0>(info.param)) + "_" + std::get<1>(info.param).name;
                         });

}  // namespace
}  // namespace loom::test
