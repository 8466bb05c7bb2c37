// Self-consistency of the forward pass, exact in f32 on the CPU:
//   batched == alone     three sequences of different lengths, prefill and decode mixed in one
//                        flat batch, give bit-identical logits to each run on its own;
//   chunked == whole     a prompt prefilled in chunks gives the whole prefill's logits;
//   f16/bf16 weights     a model stored in f16 (bf16) gives the same logits as the f32 model whose
//                        weights were rounded to f16 (bf16): conversion is exact, math unchanged.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "core/common/half.hpp"
#include "core/formats/gguf_writer.hpp"
#include "tests/unit/test_executor_support.hpp"

namespace loom {
namespace {

using test::ModelRunner;

using test::bit_equal;
using test::random_prompt;
using test::run_alone;

class ExecutorConsistency : public ::testing::Test {
 protected:
  ExecutorConsistency() : file_(GgufFile::open(test::data_path("stories260K.gguf"))), runner_(file_) {}
  GgufFile file_;
  ModelRunner runner_;
};

TEST_F(ExecutorConsistency, BatchedEqualsAlone) {
  const std::vector<int32_t> pa = random_prompt(5, 1), pb = random_prompt(23, 2), pc = random_prompt(1, 3);
  std::vector<int32_t> ta, tb, tc;
  const auto la = run_alone(runner_, pa, 3, ta);
  const auto lb = run_alone(runner_, pb, 2, tb);
  const auto lc = run_alone(runner_, pc, 2, tc);
  const int32_t V = runner_.vocab();
  auto row = [&](const std::vector<float>& l, int32_t i) { return std::span<const float>(l).subspan(static_cast<size_t>(i * V), static_cast<size_t>(V)); };

  // Different blocks than the alone runs (and B's table out of order): placement must not matter.
  const std::vector<int32_t> blk_a = ModelRunner::blocks(100, 4);
  const std::vector<int32_t> blk_b = {40, 12, 77, 5};
  const std::vector<int32_t> blk_c = ModelRunner::blocks(200, 2);
  auto sp = [](const std::vector<int32_t>& t, int32_t from, int32_t n) {
    return std::span<const int32_t>(t).subspan(static_cast<size_t>(from), static_cast<size_t>(n));
  };

  // Step 1: A prefill (5 tokens, logits), B first chunk (16 tokens, no logits).
  std::vector<SeqSchedule> s1 = {{sp(ta, 0, 5), 0, blk_a, true}, {sp(tb, 0, 16), 0, blk_b, false}};
  const auto l1 = runner_.step(s1);
  ASSERT_EQ(l1.size(), static_cast<size_t>(V));
  EXPECT_TRUE(bit_equal(row(l1, 0), la[0]));

  // Step 2: C prefill, A decode, B rest of prompt (7 tokens) -- prefill and decode mixed.
  std::vector<SeqSchedule> s2 = {
      {sp(tc, 0, 1), 0, blk_c, true}, {sp(ta, 5, 1), 5, blk_a, true}, {sp(tb, 16, 7), 16, blk_b, true}};
  const auto l2 = runner_.step(s2);
  ASSERT_EQ(l2.size(), static_cast<size_t>(3 * V));
  EXPECT_TRUE(bit_equal(row(l2, 0), lc[0]));
  EXPECT_TRUE(bit_equal(row(l2, 1), la[1]));
  EXPECT_TRUE(bit_equal(row(l2, 2), lb[0]));

  // Steps 3 and 4: all three decode.
  for (int32_t k = 0; k < 2; ++k) {
    std::vector<SeqSchedule> s = {{sp(ta, 6 + k, 1), 6 + k, blk_a, true},
                                  {sp(tb, 23 + k, 1), 23 + k, blk_b, true},
                                  {sp(tc, 1 + k, 1), 1 + k, blk_c, true}};
    const auto l = runner_.step(s);
    EXPECT_TRUE(bit_equal(row(l, 0), la[static_cast<size_t>(2 + k)])) << "step " << k;
    EXPECT_TRUE(bit_equal(row(l, 1), lb[static_cast<size_t>(1 + k)])) << "step " << k;
    EXPECT_TRUE(bit_equal(row(l, 2), lc[static_cast<size_t>(1 + k)])) << "step " << k;
  }
}

TEST_F(ExecutorConsistency, ChunkedPrefillEqualsWhole) {
  const std::vector<int32_t> p = random_prompt(37, 7);
  const std::vector<int32_t> table = ModelRunner::blocks(0, 4);
  SeqSchedule whole{p, 0, table, true};
  const auto expected = runner_.step(std::span<const SeqSchedule>(&whole, 1));

  const std::vector<int32_t> table2 = ModelRunner::blocks(50, 4);
  const std::span<const int32_t> ps(p);
  for (const auto& [from, n] : std::vector<std::pair<int32_t, int32_t>>{{0, 7}, {7, 17}, {24, 13}}) {
    SeqSchedule chunk{ps.subspan(static_cast<size_t>(from), static_cast<size_t>(n)), from, table2, from + n == 37};
    const auto l = runner_.step(std::span<const SeqSchedule>(&chunk, 1));
    if (from + n == 37) EXPECT_TRUE(bit_equal(l, expected));
    else EXPECT_TRUE(l.empty());
  }
}

// The last layer runs past attention only on the sampled rows: the logits of any set of rows
// equal those rows of an all-rows pass, bit for bit, and a batch sampling nothing gives none.
TEST_F(ExecutorConsistency, SampledRowsEqualThoseRowsOfAllRows) {
  const std::vector<int32_t> p = random_prompt(21, 13);
  const int32_t V = runner_.vocab();
  BatchBuilder builder(ModelRunner::kBlockSize);
  BuiltBatch batch;
  auto run = [&](int32_t first_block, std::vector<int32_t> rows) {
    const std::vector<int32_t> table = ModelRunner::blocks(first_block, 2);
    SeqSchedule s{p, 0, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    batch.logits_indices = std::move(rows);
    std::vector<float> logits;
    runner_.executor().execute(batch, logits);
    return logits;
  };
  std::vector<int32_t> every(21);
  for (int32_t t = 0; t < 21; ++t) every[static_cast<size_t>(t)] = t;
  const auto all = run(0, every);
  ASSERT_EQ(all.size(), static_cast<size_t>(21 * V));
  auto row = [&](int32_t t) { return std::span<const float>(all).subspan(static_cast<size_t>(t * V), static_cast<size_t>(V)); };
  const auto some = run(10, {17, 3, 20});  // out of order, as a caller may ask
  ASSERT_EQ(some.size(), static_cast<size_t>(3 * V));
  EXPECT_TRUE(bit_equal(std::span<const float>(some).subspan(0, V), row(17)));
  EXPECT_TRUE(bit_equal(std::span<const float>(some).subspan(V, V), row(3)));
  EXPECT_TRUE(bit_equal(std::span<const float>(some).subspan(2 * V, V), row(20)));
  EXPECT_FALSE(bit_equal(row(3), row(20)));
  EXPECT_TRUE(run(20, {}).empty());
  EXPECT_THROW(run(30, {21}), Error);
}

TEST(MicroBatch, SliceClipsQueryRunsAndContext) {
  // Two sequences: A at positions 10..13 (4 tokens, blocks {3, 4}), B at 0..5 (6 tokens, {7, -1}).
  BuiltBatch in;
  in.token_ids = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  in.positions = {10, 11, 12, 13, 0, 1, 2, 3, 4, 5};
  in.query_start = {0, 4, 10};
  in.seq_lens = {14, 6};
  in.slot_mapping = {74, 75, 76, 77, 112, 113, 114, 115, 116, 117};
  in.block_tables = {3, 4, 7, -1};
  in.max_blocks_per_seq = 2;
  in.block_size = 16;
  in.logits_indices = {3, 9, 6};
  BuiltBatch out;
  std::vector<int32_t> rows;
  slice_batch(in, 2, 7, out, rows);
  EXPECT_EQ(out.token_ids, (std::vector<int32_t>{3, 4, 5, 6, 7}));
  EXPECT_EQ(out.positions, (std::vector<int32_t>{12, 13, 0, 1, 2}));
  EXPECT_EQ(out.query_start, (std::vector<int32_t>{0, 2, 5}));
  EXPECT_EQ(out.seq_lens, (std::vector<int32_t>{14, 3}));  // B's context ends at its position 2
  EXPECT_EQ(out.slot_mapping, (std::vector<int32_t>{76, 77, 112, 113, 114}));
  EXPECT_EQ(out.block_tables, (std::vector<int32_t>{3, 4, 7, -1}));
  EXPECT_EQ(out.logits_indices, (std::vector<int32_t>{1, 4}));
  EXPECT_EQ(rows, (std::vector<int32_t>{0, 2}));
  slice_batch(in, 7, 10, out, rows);  // B alone
  EXPECT_EQ(out.query_start, (std::vector<int32_t>{0, 3}));
  EXPECT_EQ(out.seq_lens, (std::vector<int32_t>{6}));
  EXPECT_EQ(out.block_tables, (std::vector<int32_t>{7, -1}));
  EXPECT_EQ(out.logits_indices, (std::vector<int32_t>{2}));
  EXPECT_EQ(rows, (std::vector<int32_t>{1}));
  EXPECT_THROW(slice_batch(in, 4, 4, out, rows), Error);
  EXPECT_THROW(slice_batch(in, 0, 11, out, rows), Error);
}

TEST_F(ExecutorConsistency, MicroBatchesGiveTheLogitsOfOnePass) {
  // A step of 3 sequences (22 + 1 + 13 tokens, logits wanted on several) in one pass, then the
  // same step on fresh blocks in micro-batches of 5 tokens, which cut both prompts.
  const std::vector<int32_t> pa = random_prompt(22, 21), pb = random_prompt(1, 22), pc = random_prompt(13, 23);
  auto run = [&](int32_t first_block) {
    const std::vector<int32_t> ta = ModelRunner::blocks(first_block, 2), tb = ModelRunner::blocks(first_block + 2, 1),
                               tc = ModelRunner::blocks(first_block + 3, 1);
    const std::vector<SeqSchedule> s = {{pa, 0, ta, true}, {pb, 0, tb, true}, {pc, 0, tc, true}};
    return runner_.step(s);
  };
  const auto whole = run(0);
  runner_.executor().set_max_micro_batch(5);
  const auto micro = run(100);
  runner_.executor().set_max_micro_batch(ModelExecutor::kDefaultMicroBatch);
  ASSERT_EQ(whole.size(), static_cast<size_t>(3 * runner_.vocab()));
  EXPECT_TRUE(bit_equal(micro, whole));
  EXPECT_THROW(runner_.executor().set_max_micro_batch(0), Error);
}

TEST_F(ExecutorConsistency, ThreadCountDoesNotChangeLogits) {
  const std::vector<int32_t> p = random_prompt(29, 11);
  const std::vector<int32_t> table = ModelRunner::blocks(0, 2);
  SeqSchedule s{p, 0, table, true};
  const auto two = runner_.step(std::span<const SeqSchedule>(&s, 1));
  ModelRunner single(file_, 1);
  EXPECT_TRUE(bit_equal(single.step(std::span<const SeqSchedule>(&s, 1)), two));
}

TEST_F(ExecutorConsistency, ErrorsNameTheProblem) {
  const std::vector<int32_t> bad = {1, 512};
  const std::vector<int32_t> table = ModelRunner::blocks(0, 1);
  SeqSchedule s{bad, 0, table, true};
  try {
    runner_.step(std::span<const SeqSchedule>(&s, 1));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("token id 512"), std::string::npos) << e.what();
  }
}

// The same model with its matrices stored as `dtype`, or as f32 values rounded through `dtype`.
std::vector<uint8_t> rewrite_stories(const GgufFile& src, loom_dtype dtype, bool store_rounded_f32) {
  GgufWriter w;
  for (const auto& [key, value] : src.metadata()) {
    if (key != "general.alignment") w.set(key, value);
  }
  for (const GgufTensorInfo& t : src.tensors()) {
    int64_t n = 1;
    for (int64_t d : t.dims) n *= d;
    std::span<const float> values(static_cast<const float*>(t.data), static_cast<size_t>(n));
    if (t.dims.size() == 1) {  // norms stay f32
      w.add_tensor_f32(t.name, LOOM_DTYPE_F32, t.dims, values);
    } else if (!store_rounded_f32) {
      w.add_tensor_f32(t.name, dtype, t.dims, values);
    } else {
      std::vector<uint8_t> narrow;
      encode_f32(values, dtype, narrow);
      std::vector<float> rounded(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) {
        uint16_t h;
        std::memcpy(&h, narrow.data() + 2 * i, 2);
        rounded[static_cast<size_t>(i)] = dtype == LOOM_DTYPE_F16 ? f16_to_f32(h) : bf16_to_f32(h);
      }
      w.add_tensor_f32(t.name, LOOM_DTYPE_F32, t.dims, rounded);
    }
  }
  return w.to_bytes();
}

class HalfWeights : public ::testing::TestWithParam<loom_dtype> {};

TEST_P(HalfWeights, EqualF32ModelWithRoundedWeights) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile narrow = GgufFile::from_bytes(rewrite_stories(src, GetParam(), false), "narrow.gguf");
  const GgufFile rounded = GgufFile::from_bytes(rewrite_stories(src, GetParam(), true), "rounded.gguf");
  ModelRunner rn(narrow), rr(rounded);
  const std::vector<int32_t> p = random_prompt(9, 5);
  const std::vector<int32_t> table = ModelRunner::blocks(0, 1);
  SeqSchedule s{p, 0, table, true};
  const auto a = rn.step(std::span<const SeqSchedule>(&s, 1));
  const auto b = rr.step(std::span<const SeqSchedule>(&s, 1));
  ASSERT_EQ(a.size(), 512u);
  EXPECT_TRUE(bit_equal(a, b));
  EXPECT_EQ(rn.greedy({1}, 20), rr.greedy({1}, 20));
}

INSTANTIATE_TEST_SUITE_P(Dtypes, HalfWeights, ::testing::Values(LOOM_DTYPE_F16, LOOM_DTYPE_BF16),
                         [](const auto& info) { return info.param == LOOM_DTYPE_F16 ? "f16" : "bf16"; });

}  // namespace
}  // namespace loom
