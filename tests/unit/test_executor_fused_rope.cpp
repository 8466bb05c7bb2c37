// RoPE of K fused into the attention plugin's cache write (attention interface 1.1,
// forward_rope_k): stories260K through flash_cpu gives the same logits, bit for bit, at every step
// of a prefill and the decode steps after it, whether the plugin rotates K as it writes the pool
// or the executor rotates K first and calls forward; for an f32 pool and encoded ones.
#include <gtest/gtest.h>

#include <cstring>

#include "loom/sdk_kv_quant.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

std::vector<std::vector<float>> run_steps(loom_dtype kv_dtype, bool rope_in_plugin) {
  const GgufFile file = GgufFile::open(test::data_path("stories260K.gguf"));
  test::ModelRunner runner(file, 2, "flash_cpu", kv_dtype, rope_in_plugin);
  std::vector<int32_t> context = {1};
  for (int32_t i = 0; i < 36; ++i) context.push_back(3 + (i * 37) % 500);  // a 37-token prompt
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, test::ModelRunner::kNumBlocks);
  std::vector<std::vector<float>> logits;
  int32_t computed = 0;
  for (int32_t step = 0; step < 12; ++step) {
    const SeqSchedule s{std::span<const int32_t>(context).subspan(static_cast<size_t>(computed)), computed, table,
                        true};
    logits.push_back(runner.step(std::span<const SeqSchedule>(&s, 1)));
    computed = static_cast<int32_t>(context.size());
    context.push_back(loom::test::argmax(logits.back()));
  }
  return logits;
}

TEST(FusedRopeK, SameLogitsAsTheExecutorsRope) {
  for (const loom_dtype kv : {LOOM_DTYPE_F32, LOOM_DTYPE_F16, LOOM_DTYPE_FP8_E4M3}) {
    const auto fused = run_steps(kv, true), plain = run_steps(kv, false);
    ASSERT_EQ(fused.size(), plain.size());
    for (size_t i = 0; i < fused.size(); ++i) {
      ASSERT_EQ(fused[i].size(), plain[i].size());
      ASSERT_EQ(std::memcmp(fused[i].data(), plain[i].data(), fused[i].size() * sizeof(float)), 0)
          << "kv " << sdk::kv::dtype_name(kv) << ": step " << i;
    }
  }
}

}  // namespace
}  // namespace loom
