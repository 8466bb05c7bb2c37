// loom-convert --quantize int8|int4|fp8 (tools/convert/loom_quantized.hpp): the layout written
// (companion tensors, metadata, what stays float), the command line, and the main property: a
// model served from the pre-quantized file gives exactly the float file's logits, bit for bit,
// under the plugin of the same name, for the demo model (f32, tied head, ffn_down in = 172) and a
// random f16 one (separate head, ffn_down in = 100); plus the plugins' errors on a broken file.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <span>

#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"
#include "plugins/quantization/int8/int8_format.hpp"
#include "tests/unit/test_executor_support.hpp"
#include "tools/convert/convert_args.hpp"
#include "tools/convert/loom_quantized.hpp"

namespace loom {
namespace {

using convert::LoomQuantOptions;

GgufFile convert_file(const GgufFile& src, const LoomQuantOptions& o, std::vector<std::string>* notes = nullptr) {
  return GgufFile::from_bytes(convert::loom_quantize_gguf(src, o, notes).to_bytes(), src.path() + "." + o.format);
}

// A random f16 Llama with a separate head, as `loom-convert --random --dims ...` writes it.
GgufFile random_model() {
  RandomLlamaOptions opts;
  opts.shape = parse_llama_dims("dim=64,hidden=100,layers=2,heads=4,kv_heads=2,ctx=256");
  opts.dtype = LOOM_DTYPE_F16;
  opts.seed = 7;
  const GgufMetadata tok = tokenizer_metadata(GgufFile::open(test::data_path("stories260K.gguf")));
  return GgufFile::from_bytes(random_llama_gguf(opts, tok).to_bytes(), "random-llama");
}

// The logits of a 12-token prefill (through the plugins' many-row tile path) and of three
// single-token decode steps after it (the in-register path), concatenated.
std::vector<float> logits(const GgufFile& file, const std::string& plugin, const std::string& config) {
  constexpr int32_t kBlockSize = 16, kNumBlocks = 8;
  const LlamaWeights weights = load_llama_weights(file);
  const LlamaHparams& hp = weights.hparams;
  ThreadPool threads(2);
  const test::ModelPlugins plugins(threads, hp, kBlockSize, "naive", plugin, LOOM_DTYPE_F32, config);
  KvPool pool(KvPoolShape{hp.n_layers, kNumBlocks, kBlockSize, hp.n_kv_heads, hp.head_dim, LOOM_DTYPE_F32});
  ModelExecutor executor(weights, plugins.attention_ops(), plugins.quant_ops(), pool, threads);
  const std::vector<int32_t> tokens = {1, 403, 31, 268, 9, 87, 455, 2, 120, 66, 301, 15, 44, 210, 7};
  const std::vector<int32_t> table = test::ModelRunner::blocks(0, kNumBlocks);
  BatchBuilder builder(kBlockSize);
  BuiltBatch batch;
  std::vector<float> all, step;
  int32_t computed = 0;
  for (const int32_t n : {12, 1, 1, 1}) {
    SeqSchedule s{std::span<const int32_t>(tokens).subspan(static_cast<size_t>(computed), static_cast<size_t>(n)),
                  computed, table, true};
    builder.build(std::span<const SeqSchedule>(&s, 1), batch);
    executor.execute(batch, step);
    all.insert(all.end(), step.begin(), step.end());
    computed += n;
  }
  return all;
}

// Whether `plugin` reads pre-quantized weights stored as `dtype` (int4's reader is added apart).
bool reads(const std::string& plugin, loom_dtype dtype) {
  ThreadPool threads(1);
  PluginHost host(threads, {});
  loom_quantization_create_args qa{};
  qa.struct_size = sizeof(qa);
  qa.device = loom_device{LOOM_DEVICE_CPU, 0};
  const auto p = host.create(PluginSpec{LOOM_KIND_QUANTIZATION, plugin, "", "{}"}, &qa);
  ErrorBuffer err;
  loom_error_buf eb = err.buf();
  int32_t ok = 0;
  return p->vtable<loom_quantization_vtable>().supports(p->self(), dtype, &ok, &eb) == LOOM_OK && ok == 1;
}

void expect_same_logits(const GgufFile& src, const LoomQuantOptions& o, const std::string& plugin,
                        const std::string& config) {
  const GgufFile q = convert_file(src, o);
  const std::vector<float> want = logits(src, plugin, config);
  const std::vector<float> got = logits(q, plugin, config);
  ASSERT_EQ(got.size(), want.size());
  ASSERT_EQ(got.size(), 4u * static_cast<size_t>(load_llama_weights(src).hparams.vocab_size));
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::memcmp(&got[i], &want[i], sizeof(float)), 0)
        << src.path() << " " << o.format << " " << config << ": logit " << i << " " << got[i] << " vs " << want[i];
}

TEST(ConvertPrequantized, WritesTheLayout) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  std::vector<std::string> notes;
  const GgufFile q = convert_file(src, {"int8", 128, true}, &notes);
  EXPECT_EQ(q.get_string("loom.quantization.format", ""), "int8");
  EXPECT_EQ(q.get_int("general.file_type", -1), src.get_int("general.file_type", -1));
  EXPECT_EQ(q.get_string("general.architecture", ""), "llama");
  // 5 layers x 7 matrices gain a .scale each.
  EXPECT_EQ(q.tensors().size(), src.tensors().size() + 35);
  const GgufTensorInfo& f = src.tensor("blk.0.ffn_down.weight");  // [64, 172]
  const GgufTensorInfo& w = q.tensor("blk.0.ffn_down.weight");
  const GgufTensorInfo& s = q.tensor("blk.0.ffn_down.weight.scale");
  ASSERT_EQ(f.dtype, LOOM_DTYPE_F32);
  ASSERT_EQ(w.dtype, LOOM_DTYPE_I8);
  EXPECT_EQ(w.dims, (std::vector<int64_t>{172, 64}));
  ASSERT_EQ(s.dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(s.dims, (std::vector<int64_t>{64}));
  // Every weight is its source to within half a step, and each row's extreme hits +-127.
  const auto* fv = static_cast<const float*>(f.data);
  const auto* qv = static_cast<const int8_t*>(w.data);
  const auto* sv = static_cast<const float*>(s.data);
  for (int64_t o = 0; o < 64; ++o) {
    int amax = 0;
    for (int64_t k = 0; k < 172; ++k) {
      ASSERT_LE(std::fabs(qv[o * 172 + k] * sv[o] - fv[o * 172 + k]), sv[o] * 0.5001f) << o << "," << k;
      amax = std::max(amax, std::abs(int{qv[o * 172 + k]}));
    }
    EXPECT_EQ(amax, 127) << o;
  }
  // The embedding (also the tied head) and the norms stay f32, with a note for the former.
  EXPECT_EQ(q.tensor("token_embd.weight").dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(q.tensor("blk.0.attn_norm.weight").dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(q.find_tensor("token_embd.weight.scale"), nullptr);
  ASSERT_EQ(notes.size(), 1u);
  EXPECT_NE(notes[0].find("token_embd.weight"), std::string::npos) << notes[0];

  // int4, group 32: ffn_down's 172 inputs are 22 words and 6 groups (the last of 12 values).
  const GgufFile q4 = convert_file(src, {"int4", 32, true});
  EXPECT_EQ(q4.get_string("loom.quantization.format", ""), "int4");
  EXPECT_EQ(q4.get_int("loom.quantization.group_size", 0), 32);
  EXPECT_EQ(q4.tensor("blk.0.ffn_down.weight").dtype, LOOM_DTYPE_I32);
  EXPECT_EQ(q4.tensor("blk.0.ffn_down.weight").dims, (std::vector<int64_t>{22, 64}));
  EXPECT_EQ(q4.tensor("blk.0.ffn_down.weight.scale").dims, (std::vector<int64_t>{6, 64}));
  EXPECT_EQ(q4.tensor("blk.0.ffn_down.weight.zero").dtype, LOOM_DTYPE_I8);
  EXPECT_EQ(q4.tensor("blk.0.ffn_down.weight.zero").dims, (std::vector<int64_t>{6, 64}));
  const GgufFile q4s = convert_file(src, {"int4", 128, false});
  EXPECT_EQ(q4s.find_tensor("blk.0.ffn_down.weight.zero"), nullptr);
  EXPECT_EQ(q4s.tensor("blk.0.ffn_down.weight.scale").dims, (std::vector<int64_t>{2, 64}));

  const GgufFile q8 = convert_file(src, {"fp8", 128, true});
  EXPECT_EQ(q8.get_string("loom.quantization.format", ""), "fp8_e4m3");
  EXPECT_EQ(q8.tensor("blk.1.attn_v.weight").dtype, LOOM_DTYPE_I8);
}

TEST(ConvertPrequantized, CommandLine) {
  const auto a = convert::parse_args(
      {"--input", "in.gguf", "--quantize", "int4", "--group-size", "64", "--no-zero-point", "-o", "o.gguf"});
  EXPECT_EQ(a.quantize, "int4");
  EXPECT_EQ(a.group_size, 64);
  EXPECT_FALSE(a.zero_point);
  const auto d = convert::parse_args({"--input", "in.gguf", "--quantize", "fp8", "-o", "o.gguf"});
  EXPECT_EQ(d.group_size, 128);
  EXPECT_TRUE(d.zero_point);
  EXPECT_THROW(convert::parse_args({"--input", "i.gguf", "--quantize", "int8", "--group-size", "64", "-o", "o.gguf"}),
               convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--input", "i.gguf", "--quantize", "int4", "--group-size", "48", "-o", "o.gguf"}),
               convert::UsageError);
  EXPECT_THROW(convert::parse_args({"--input", "i.gguf", "--quantize", "int2", "-o", "o.gguf"}), convert::UsageError);
  EXPECT_NE(std::string(convert::usage_text()).find("--no-zero-point"), std::string::npos);
  // The shared command-line style: --opt=value as well, and the last of a repeat wins.
  const auto e = convert::parse_args(
      {"--input=in.gguf", "--quantize=int4", "--group-size=32", "--group-size=128", "--output=o.gguf"});
  EXPECT_EQ(e.input, "in.gguf");
  EXPECT_EQ(e.group_size, 128);
  EXPECT_EQ(e.output, "o.gguf");
  EXPECT_EQ(e.mode, convert::Mode::kInput);
  EXPECT_EQ(convert::parse_args({"--help"}).mode, convert::Mode::kHelp);
}

TEST(ConvertPrequantized, Int8GivesTheFloatLogits) {
  const GgufFile demo = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile rnd = random_model();
  for (const GgufFile* src : {&demo, &rnd}) {
    expect_same_logits(*src, {"int8", 128, true}, "int8", "{}");
    expect_same_logits(*src, {"int8", 128, true}, "int8", R"({"mode": "w8a8"})");
  }
}

TEST(ConvertPrequantized, Fp8GivesTheFloatLogits) {
  const GgufFile demo = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile rnd = random_model();
  for (const GgufFile* src : {&demo, &rnd}) expect_same_logits(*src, {"fp8", 128, true}, "fp8", "{}");
}

TEST(ConvertPrequantized, Int4GivesTheFloatLogits) {
  if (!reads("int4", LOOM_DTYPE_I32))
    GTEST_SKIP() << "the int4 plugin does not read pre-quantized I32 weights yet (its reader is being added "
                    "separately); this test holds it to the float file's logits once it does";
  const GgufFile demo = GgufFile::open(test::data_path("stories260K.gguf"));
  const GgufFile rnd = random_model();
  for (const GgufFile* src : {&demo, &rnd}) {
    expect_same_logits(*src, {"int4", 128, true}, "int4", "{}");
    expect_same_logits(*src, {"int4", 32, false}, "int4", R"({"group_size": 32, "zero_point": false})");
  }
}

// `f` rewritten with `drop` left out, and `retype` (if given) stored as f16 bytes of its size.
GgufFile edited(const GgufFile& f, const std::string& drop, const std::string& retype = "") {
  GgufWriter w(f.alignment());
  for (const auto& [key, value] : f.metadata())
    if (key != "general.alignment") w.set(key, value);
  for (const GgufTensorInfo& t : f.tensors()) {
    if (t.name == drop) continue;
    const auto* p = static_cast<const uint8_t*>(t.data);
    if (t.name == retype) {
      w.add_tensor(t.name, LOOM_DTYPE_F16, t.dims, std::vector<uint8_t>(p, p + t.nbytes / 2));
    } else {
      w.add_tensor(t.name, t.dtype, t.dims, std::vector<uint8_t>(p, p + t.nbytes));
    }
  }
  return GgufFile::from_bytes(w.to_bytes(), f.path() + ".edited");
}

std::string load_error(const GgufFile& file, const std::string& plugin) {
  try {
    logits(file, plugin, "{}");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(ConvertPrequantized, PluginsNameAMissingOrMisshapenCompanion) {
  const GgufFile src = GgufFile::open(test::data_path("stories260K.gguf"));
  for (const char* format : {"int8", "fp8"}) {
    const GgufFile q = convert_file(src, {format, 128, true});
    const std::string missing = load_error(edited(q, "blk.1.ffn_up.weight.scale"), format);
    EXPECT_NE(missing.find("companion tensor blk.1.ffn_up.weight.scale is missing"), std::string::npos) << missing;
    const std::string wrong = load_error(edited(q, "", "blk.0.attn_q.weight.scale"), format);
    EXPECT_NE(wrong.find("blk.0.attn_q.weight.scale is f16 [64], expected f32 [64]"), std::string::npos) << wrong;
  }
  // The float file's plugins still refuse what they cannot read, naming it.
  const std::string none = load_error(convert_file(src, {"int8", 128, true}), "none");
  EXPECT_NE(none.find("blk.0.attn_q.weight"), std::string::npos) << none;
}

}  // namespace
}  // namespace loom
