// loom-server's default KV-cache size: fraction x available memory - model, capped at what the
// sequences can use, floored at one full-length sequence (or 16 MiB); and its use on a real model.
#include <gtest/gtest.h>

#include "core/server/kv_memory_budget.hpp"

namespace loom {
namespace {

constexpr int64_t kMiB = 1 << 20;
constexpr int64_t kGiB = int64_t{1} << 30;

// stories260K-sized: 5 layers x 4 KV heads x head_dim 8, f32: 2 x 5 x 4 x 8 x 4 = 1280 B/token.
KvBudgetInputs tiny(int64_t mem_available) {
  return KvBudgetInputs{.mem_available = mem_available,
                        .model_bytes = kMiB,
                        .memory_utilization = 0.9,
                        .bytes_per_token = 1280,
                        .bytes_per_block_extra = 0,
                        .block_size = 16,
                        .max_num_seqs = 8,
                        .max_model_len = 256};
}

TEST(ServerKvMemoryBudget, ASmallModelGetsOnlyWhatItsSequencesCanUse) {
  const KvBudget b = kv_memory_budget(tiny(24 * kGiB));
  // 8 sequences x 16 blocks of 16 tokens x 1280 B.
  EXPECT_EQ(b.kv_memory, 8 * 16 * 16 * 1280);
  EXPECT_EQ(b.reason,
            "all that 8 seqs x 256 tokens x 1280 B/token can use (0.9 x 24576.0 MiB available - 1.0 MiB "
            "model = 22117.4 MiB would allow more)");
}

TEST(ServerKvMemoryBudget, ABigModelGetsTheFractionOfAvailableMemoryLeftByTheWeights) {
  KvBudgetInputs in = tiny(kGiB);
  in.model_bytes = 512 * kMiB;
  in.bytes_per_token = 131072;  // 16 tokens = 2 MiB blocks; 8 x 256 tokens would need 256 MiB
  in.max_num_seqs = 256;        // ... and 256 sequences 8 GiB
  const KvBudget b = kv_memory_budget(in);
  EXPECT_EQ(b.kv_memory, static_cast<int64_t>(0.9 * static_cast<double>(kGiB)) - 512 * kMiB);
  EXPECT_EQ(b.reason,
            "0.9 x 1024.0 MiB available - 512.0 MiB model = 409.6 MiB (less than the 8192.0 MiB that 256 seqs x "
            "256 tokens x 131072 B/token could use)");
}

TEST(ServerKvMemoryBudget, TooLittleMemoryGetsTheFloor) {
  // One full-length sequence when it is above 16 MiB ...
  KvBudgetInputs in = tiny(0);
  in.bytes_per_token = 131072;
  in.max_num_seqs = 256;
  EXPECT_EQ(kv_memory_budget(in).kv_memory, 32 * kMiB);
  // ... else 16 MiB, but never more than all the sequences can use.
  in.bytes_per_token = 1024;
  EXPECT_EQ(kv_memory_budget(in).kv_memory, kMinKvMemory);
  EXPECT_EQ(kv_memory_budget(tiny(0)).kv_memory, 8 * 16 * 16 * 1280);
  EXPECT_EQ(kv_memory_budget(tiny(0)).reason.rfind("the floor of 2.5 MiB: ", 0), 0u) << kv_memory_budget(tiny(0)).reason;
}

TEST(ServerKvMemoryBudget, ScalesAndPartialBlocksAreCounted) {
  KvBudgetInputs in = tiny(24 * kGiB);
  in.bytes_per_block_extra = 160;  // int8 KV: one f32 scale per layer, K/V and KV head
  in.max_model_len = 250;          // still 16 blocks per sequence
  EXPECT_EQ(kv_memory_budget(in).kv_memory, 8 * 16 * (16 * 1280 + 160));
}

TEST(ServerKvMemoryBudget, WritesKvMemoryIntoTheCacheTableFromTheModelShape) {
  Config c = builtin_config();
  c.model.path = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";
  c.model.max_model_len = 256;
  set_plugin_key(c.scheduler, "max_num_seqs", "8");
  const std::optional<std::string> why = apply_kv_memory_budget(c);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(why->rfind("KV cache: 2.5 MiB, all that 8 seqs x 256 tokens x 1280 B/token can use", 0), 0u) << *why;
  EXPECT_EQ(c.cache, (PluginTable{"paged", "", R"({"block_size":16,"kv_memory":"2560KiB"})"}));

  // A size the config sets is left alone.
  EXPECT_FALSE(apply_kv_memory_budget(c).has_value());
  Config blocks = builtin_config();
  blocks.model.path = c.model.path;
  set_plugin_key(blocks.cache, "num_blocks", "12");
  EXPECT_FALSE(apply_kv_memory_budget(blocks).has_value());
  EXPECT_EQ(blocks.cache.config_json, R"({"block_size":16,"num_blocks":12})");
}

TEST(ServerKvMemoryBudget, AvailableMemoryIsRead) {
  const std::optional<int64_t> bytes = available_memory_bytes();
  ASSERT_TRUE(bytes.has_value());
  EXPECT_GT(*bytes, 0);
}

}  // namespace
}  // namespace loom
