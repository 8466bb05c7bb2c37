// Batching is invisible in the output: 64 concurrent greedy requests (f32 demo model) give
// token for token what each gives alone, whatever cache, token budget, attention kernel or
// preemption the batch went through. "Alone" is the same request sent sequentially to a
// reference server (contiguous cache, fcfs scheduler) with the same attention plugin, since
// flash_cpu's logits may differ from naive's in the last bits.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <latch>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

constexpr int kNumRequests = 64;
constexpr int kMaxModelLen = 512;  // the demo model's context
constexpr int32_t kBos = 1;
constexpr int32_t kFirstId = 3;  // ids below are <unk>, BOS, EOS
constexpr int32_t kVocab = 512;
// Generous: 64 requests share two CPU cores, and a 16-token budget makes prefills slow.
constexpr std::chrono::seconds kHttpTimeout{120};

struct Prompt {
  std::vector<int32_t> ids;
  int max_tokens = 0;
};

// 64 token-id prompts of 1..400 tokens from a fixed seed. The first 48 fall into 8 groups that
// share a 100..300-token prefix (prefix-cache hits under paged caching); the other 16 stand alone
// and include the shortest prompt (BOS only) and the longest (400 tokens).
std::vector<Prompt> make_prompts() {
  std::mt19937 rng(20261129);
  auto uniform = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };
  auto random_ids = [&](int n) {
    std::vector<int32_t> ids;
    for (int i = 0; i < n; ++i) ids.push_back(uniform(kFirstId, kVocab - 1));
    return ids;
  };
  std::vector<std::vector<int32_t>> prefixes;
  for (int g = 0; g < 8; ++g) prefixes.push_back(random_ids(uniform(100, 300)));

  std::vector<Prompt> prompts;
  for (int i = 0; i < kNumRequests; ++i) {
    Prompt p;
    p.ids.push_back(kBos);
    int length = 0;
    if (i < 48) {
      const auto& prefix = prefixes[static_cast<size_t>(i % 8)];
      p.ids.insert(p.ids.end(), prefix.begin(), prefix.end());
      length = uniform(static_cast<int>(p.ids.size()), 400);
    } else {
      length = i == 48 ? 1 : i == 49 ? 400 : uniform(1, 400);
    }
    const std::vector<int32_t> rest = random_ids(length - static_cast<int>(p.ids.size()));
    p.ids.insert(p.ids.end(), rest.begin(), rest.end());
    p.max_tokens = std::min(uniform(8, 24), kMaxModelLen - length);
    prompts.push_back(std::move(p));
  }
  return prompts;
}

const std::vector<Prompt>& prompts() {
  static const std::vector<Prompt> all = make_prompts();
  return all;
}

struct Outcome {
  std::string text;
  int completion_tokens = -1;
  std::string finish_reason;
  std::string error;  // non-empty when the request failed
  bool operator==(const Outcome&) const = default;
};

std::ostream& operator<<(std::ostream& os, const Outcome& o) {
  return os << "{text=" << json(o.text).dump() << ", completion_tokens=" << o.completion_tokens
            << ", finish=" << o.finish_reason << (o.error.empty() ? "" : ", error=" + o.error) << "}";
}

Outcome complete(HttpTestClient& client, const Prompt& p) {
  Outcome out;
  try {
    const json request = {{"prompt", p.ids}, {"temperature", 0}, {"max_tokens", p.max_tokens}};
    const HttpResponse r = client.post("/v1/completions", request.dump());
    if (r.status != 200) {
      out.error = "HTTP " + std::to_string(r.status) + ": " + r.body;
      return out;
    }
    const json body = json::parse(r.body);
    out.text = body["choices"][0]["text"].get<std::string>();
    out.finish_reason = body["choices"][0]["finish_reason"].get<std::string>();
    out.completion_tokens = body["usage"]["completion_tokens"].get<int>();
    if (body["usage"]["prompt_tokens"].get<size_t>() != p.ids.size()) out.error = "prompt_tokens mismatch";
  } catch (const std::exception& e) {
    out.error = e.what();
  }
  return out;
}

std::string server_config(const std::string& attention, const std::string& scheduler, const std::string& cache) {
  return demo_config("[attention]\nplugin = \"" + attention + "\"\n" + scheduler + cache);
}

// Each prompt sent alone, one after the other, to the reference config; computed once per
// attention plugin and shared by the configs that use it.
const std::vector<Outcome>& reference(const std::string& attention) {
  static std::mutex mutex;
  static std::map<std::string, std::vector<Outcome>> cache;
  std::lock_guard lock(mutex);
  auto it = cache.find(attention);
  if (it != cache.end()) return it->second;
  LiveServer server(server_config(attention, "[scheduler]\nplugin = \"fcfs\"\n",
                                  "[cache]\nplugin = \"contiguous\"\nkv_memory = \"16MiB\"\n"));
  HttpTestClient client(server.port(), "127.0.0.1", kHttpTimeout);
  std::vector<Outcome> outcomes;
  for (const Prompt& p : prompts()) outcomes.push_back(complete(client, p));
  return cache.emplace(attention, std::move(outcomes)).first->second;
}

struct BatchConfig {
  std::string name;
  std::string attention;
  std::string scheduler;  // the whole [scheduler] table
  std::string cache;      // the whole [cache] table
  bool expect_preemptions = false;
  bool expect_swaps = false;  // preempted requests come back from the cache_offload tier
};

std::string continuous(int max_num_batched_tokens) {
  return "[scheduler]\nplugin = \"continuous\"\nmax_num_seqs = 64\nmax_num_batched_tokens = " +
         std::to_string(max_num_batched_tokens) + "\n";
}
const std::string kContiguous = "[cache]\nplugin = \"contiguous\"\nkv_memory = \"64MiB\"\n";
std::string paged(bool prefix_caching) {
  return std::string("[cache]\nplugin = \"paged\"\nkv_memory = \"64MiB\"\ncheck_invariants = true\n") +
         "enable_prefix_caching = " + (prefix_caching ? "true" : "false") + "\n";
}
// 40 blocks of 16 = 640 tokens: the longest request (448) fits alone, 64 together cannot.
const std::string kTinyPaged =
    "[cache]\nplugin = \"paged\"\nnum_blocks = 40\nblock_size = 16\ncheck_invariants = true\n"
    "enable_prefix_caching = true\n";

// A subset of {contiguous, paged+prefix, paged, radix} x budget {16, 64, 2048} x {naive,
// flash_cpu}: every budget twice, every cache at least once, kept small for two CPU cores.
std::vector<BatchConfig> batch_configs() {
  std::vector<BatchConfig> configs = {
      {"contiguous_b2048_naive", "naive", continuous(2048), kContiguous},
      {"contiguous_b16_flash", "flash_cpu", continuous(16), kContiguous},
      {"pagedPrefix_b64_naive", "naive", continuous(64), paged(true)},
      {"pagedPrefix_b16_flash", "flash_cpu", continuous(16), paged(true)},
      {"paged_b2048_flash", "flash_cpu", continuous(2048), paged(false)},
      {"tinyPagedPrefix_b64_naive_preempts", "naive", continuous(64), kTinyPaged, true},
      // Preemption by swap: the same tiny pool without prefix caching, so every restored token
      // comes from the host tier rather than from a prefix hit.
      {"tinyPaged_b64_flash_swaps", "flash_cpu", continuous(64),
       "[cache]\nplugin = \"paged\"\nnum_blocks = 40\nblock_size = 16\ncheck_invariants = true\n"
       "enable_prefix_caching = false\n[cache_offload]\nplugin = \"host\"\ncapacity = \"64MiB\"\n",
       true, true},
      {"radix_b64_flash", "flash_cpu", continuous(64),
       "[cache]\nplugin = \"radix\"\nkv_memory = \"64MiB\"\ncheck_invariants = true\n"},
      // scheduler/slo: EDF, TPOT-sized chunks (a 1 ms bound, so chunks are cut to the floor) and
      // priority preemption must not change a greedy text either.
      {"slo_pagedPrefix_b64_flash", "flash_cpu",
       "[scheduler]\nplugin = \"slo\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 64\ndefault_tpot_ms = 1\n",
       paged(true)},
      {"slo_tinyPaged_b64_naive_preempts", "naive",
       "[scheduler]\nplugin = \"slo\"\nmax_num_seqs = 64\nmax_num_batched_tokens = 64\n", kTinyPaged, true},
  };
  return configs;
}

// Runs the 64 prompts at once against `config` and compares each with the same prompt alone.
void expect_batch_equals_alone(const BatchConfig& config, const std::vector<Outcome>& alone) {
  SCOPED_TRACE(config.name);
  LiveServer server(server_config(config.attention, config.scheduler, config.cache));
  std::vector<Outcome> together(prompts().size());
  {
    // Every client connects first, then all send at once so the scheduler sees one burst.
    std::latch ready(static_cast<std::ptrdiff_t>(prompts().size()));
    std::vector<std::thread> threads;
    for (size_t i = 0; i < prompts().size(); ++i) {
      threads.emplace_back([&, i] {
        try {
          HttpTestClient client(server.port(), "127.0.0.1", kHttpTimeout);
          ready.arrive_and_wait();
          together[i] = complete(client, prompts()[i]);  // catches everything itself
        } catch (const std::exception& e) {
          ready.count_down();  // only the connect can throw, before arriving: never counts twice
          together[i].error = e.what();
        }
      });
    }
    for (auto& t : threads) t.join();
  }
  for (size_t i = 0; i < prompts().size(); ++i) {
    EXPECT_EQ(together[i], alone[i]) << "request " << i << " (" << prompts()[i].ids.size()
                                     << " prompt tokens, max_tokens " << prompts()[i].max_tokens << ")";
  }

  // Everything handed back once the burst is over.
  std::map<std::string, double> m;
  EXPECT_TRUE(wait_for([&] {
    m = server.metrics();
    return m.at("loom:num_requests_running") == 0 && m.at("loom:num_requests_waiting") == 0 &&
           m.at("loom:kv_cache_used_blocks") == 0 && m.at("loom:kv_cache_num_seqs") == 0;
  })) << "blocks or requests still held after every request finished";
  if (config.expect_preemptions) {
    EXPECT_GT(m.at("loom:num_preemptions_total"), 0) << "the small pool never preempted";
  }
  if (config.expect_swaps) {
    EXPECT_GT(m.at("loom:kv_swapped_out_blocks_total"), 0) << "no preempted request was swapped out";
    EXPECT_GT(m.at("loom:kv_swapped_in_blocks_total"), 0) << "no swapped block was restored";
  }
  EXPECT_EQ(m.at("loom:request_success_total"), kNumRequests);
}

// One case per attention kernel, looping over that kernel's configs: under ctest every case is
// its own process, and the 64 sequential reference requests are the costly part, so they are
// computed once per kernel rather than once per config.
class E2eBatching : public ::testing::TestWithParam<std::string> {};

TEST_P(E2eBatching, ConcurrentGreedyEqualsAloneTokenForToken) {
  const std::string& attention = GetParam();
  const std::vector<Outcome>& alone = reference(attention);
  for (size_t i = 0; i < alone.size(); ++i) ASSERT_TRUE(alone[i].error.empty()) << "reference " << i << ": " << alone[i];
  if (attention != "naive") {
    // The kernels agree on greedy text for this model: the per-kernel references are a
    // precaution against last-bit differences, not a way to hide a kernel bug.
    const std::vector<Outcome>& naive = reference("naive");
    for (size_t i = 0; i < alone.size(); ++i) EXPECT_EQ(alone[i], naive[i]) << "alone, request " << i;
  }
  int ran = 0;
  for (const BatchConfig& config : batch_configs()) {
    if (config.attention != attention) continue;
    expect_batch_equals_alone(config, alone);
    ++ran;
  }
  EXPECT_GE(ran, 3);
}

INSTANTIATE_TEST_SUITE_P(Attention, E2eBatching, ::testing::Values("naive", "flash_cpu"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });

}  // namespace
}  // namespace loom::test
