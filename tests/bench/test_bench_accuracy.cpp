// The accuracy bounds of docs/quantization.md, on the demo model (stories260K) and the held-out
// text: the perplexity of each weight format / KV dtype may exceed the f32 one by at most its
// bound. Every test prints the perplexity it would reject, f32 * (1 + bound).
//
// Measured (ctx 512, 2179 tokens; tools/bench/accuracy-report.sh): f32 4.6070; INT8 w8a16
// 4.6071; GGUF Q8_0 4.6148 (+0.17%); GGUF Q4_0 4.8680 (+5.66%); INT4 group 32 with zero points
// 4.8654 (+5.61%; the output head kept in float and the per-group scale/zero search at load;
// it was +9.94% with a 4-bit head and plain min/max scales); KV int8 4.6306 (+0.51%); KV
// fp8_e4m3 4.6751 (+1.48%, per-token f16 scales; it was +3.05% with power-of-two block scales).
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <unistd.h>

#include "core/common/error.hpp"
#include "core/formats/gguf_file.hpp"
#include "tools/bench/model/perplexity.hpp"
#include "tools/convert/weight_quantizer.hpp"

namespace loom::bench {
namespace {

const std::string kModel = std::string(LOOM_TEST_DATA) + "/stories260K.gguf";
const std::string kText = std::string(LOOM_TEST_DATA) + "/heldout_stories.txt";

constexpr double kInt8Bound = 0.01;
constexpr double kQ8_0Bound = 0.01;
constexpr double kQ4_0Bound = 0.06;
constexpr double kInt4Bound = 0.06;
constexpr double kKvInt8Bound = 0.01;
constexpr double kKvFp8Bound = 0.02;
constexpr double kComputeBf16Bound = 0.005;

PerplexityOptions options(const std::string& model = kModel) {
  PerplexityOptions o;
  o.model = model;
  o.text = kText;
  o.threads = 2;
  return o;
}

std::string read_text() {
  std::ifstream in(kText, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

double perplexity_of(const PerplexityOptions& o) {
  PerplexityRun run(o);
  return run.score(run.tokenize(read_text())).perplexity;
}

// f32 weights, f32 KV: measured once for the whole suite.
double f32_perplexity() {
  static const double ppl = perplexity_of(options());
  return ppl;
}

// The demo model rewritten by loom-convert's quantizer into `format` (q8_0, q4_0), in a temp dir.
std::string quantized_demo(const std::string& format) {
  const std::string name = "loom_accuracy_" + format + "_" + std::to_string(::getpid()) + ".gguf";
  const std::string path = (std::filesystem::temp_directory_path() / name).string();
  const GgufFile in = GgufFile::open(kModel);
  const convert::WeightQuantizer* q = convert::find_weight_quantizer(format);
  if (q == nullptr) throw std::runtime_error("no weight quantizer " + format);
  convert::quantize_gguf(in, *q, nullptr).write(path);
  return path;
}

void expect_within(double ppl, double bound, const char* what) {
  const double base = f32_perplexity();
  const double rejected_above = base * (1.0 + bound);
  std::printf("%s: perplexity %.4f vs f32 %.4f (%+.2f%%), bound %.1f%% rejects > %.4f\n", what, ppl, base,
              100.0 * (ppl / base - 1.0), 100.0 * bound, rejected_above);
  EXPECT_GE(ppl, base * 0.98) << what << ": far better than f32 means the comparison is broken";
  EXPECT_LE(ppl, rejected_above) << what << ": " << ppl << " vs f32 " << base;
}

TEST(BenchAccuracy, F32IsTheRecordedValue) { EXPECT_NEAR(f32_perplexity(), 4.6070, 0.01); }

TEST(BenchAccuracy, Int8WeightOnlyWithinOnePercent) {
  PerplexityOptions o = options();
  o.quantization = "int8";
  o.quantization_config = R"({"mode": "w8a16"})";
  expect_within(perplexity_of(o), kInt8Bound, "int8 w8a16");
}

TEST(BenchAccuracy, GgufQ8_0WithinOnePercent) {
  const std::string path = quantized_demo("q8_0");
  PerplexityOptions o = options(path);
  o.quantization = "gguf";
  const double ppl = perplexity_of(o);
  std::filesystem::remove(path);
  expect_within(ppl, kQ8_0Bound, "gguf q8_0");
}

TEST(BenchAccuracy, GgufQ4_0WithinSixPercent) {
  const std::string path = quantized_demo("q4_0");
  PerplexityOptions o = options(path);
  o.quantization = "gguf";
  const double ppl = perplexity_of(o);
  std::filesystem::remove(path);
  expect_within(ppl, kQ4_0Bound, "gguf q4_0");
}

TEST(BenchAccuracy, Int4Group32ZeroPointWithinSixPercent) {
  PerplexityOptions o = options();
  o.quantization = "int4";
  o.quantization_config = R"({"group_size": 32, "zero_point": true})";
  expect_within(perplexity_of(o), kInt4Bound, "int4 group 32 + zero points");
}

TEST(BenchAccuracy, KvInt8WithinOnePercent) {
  PerplexityOptions o = options();
  o.kv_dtype = "int8";
  expect_within(perplexity_of(o), kKvInt8Bound, "kv int8");
}

TEST(BenchAccuracy, KvFp8WithinTwoPercent) {
  PerplexityOptions o = options();
  o.kv_dtype = "fp8_e4m3";
  expect_within(perplexity_of(o), kKvFp8Bound, "kv fp8_e4m3");
}

// quantization none with compute = "bf16" (weights and activations rounded to bfloat16 on
// AVX512-BF16): issue 18 asks for perplexity within 0.5% of f32. Without the instructions the
// plugin computes exactly, so there is nothing to bound.
TEST(BenchAccuracy, ComputeBf16WithinHalfAPercent) {
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512bf16")))
    GTEST_SKIP() << "this CPU has no AVX512-BF16: compute = \"bf16\" falls back to the exact path";
  PerplexityOptions o = options();
  o.quantization = "none";
  o.quantization_config = R"({"compute": "bf16"})";
  expect_within(perplexity_of(o), kComputeBf16Bound, "none compute bf16");
}

// The logit error is 0 against itself and grows with coarser weights: the measure can tell.
TEST(BenchAccuracy, LogitErrorOrdersTheFormats) {
  PerplexityRun reference(options());
  const std::vector<int32_t> ids = [&] {
    std::vector<int32_t> all = reference.tokenize(read_text());
    all.resize(300);
    return all;
  }();
  PerplexityRun same(options());
  const LogitsError self = logits_error(same, reference, ids);
  EXPECT_EQ(self.positions, 300 + 1);  // one window: BOS + 300 tokens
  EXPECT_EQ(self.rel_rms, 0.0);
  PerplexityOptions o8 = options();
  o8.quantization = "int8";
  PerplexityRun int8(o8);
  PerplexityOptions o4 = options();
  o4.quantization = "int4";
  PerplexityRun int4(o4);
  const double e8 = logits_error(int8, reference, ids).rel_rms;
  const double e4 = logits_error(int4, reference, ids).rel_rms;
  EXPECT_GT(e8, 0.0);
  EXPECT_LT(e8, 0.02);
  EXPECT_GT(e4, 4.0 * e8) << "int8 " << e8 << ", int4 " << e4;
}

TEST(BenchAccuracy, ReportOptionsAreParsed) {
  const char* ok[] = {"perplexity", "--model", "m.gguf", "--text", "t", "--quantization", "int4",
                      "--quantization-config", R"({"group_size": 32})", "--compare-logits", "ref.gguf",
                      "--compare-tokens", "100"};
  const PerplexityOptions o = parse_perplexity_options(13, const_cast<char**>(ok));
  EXPECT_EQ(o.quantization_config, R"({"group_size": 32})");
  EXPECT_EQ(o.compare_logits, "ref.gguf");
  EXPECT_EQ(o.compare_tokens, 100);
  const char* zero[] = {"perplexity", "--model", "m.gguf", "--text", "t", "--compare-tokens", "0"};
  EXPECT_THROW(parse_perplexity_options(7, const_cast<char**>(zero)), Error);
  // A config the plugin rejects fails when the model loads, naming the key.
  PerplexityOptions bad = options();
  bad.quantization = "int4";
  bad.quantization_config = R"({"group_size": 48})";
  try {
    PerplexityRun run(bad);
    FAIL() << "group_size 48 was accepted";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("group_size"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace loom::bench
