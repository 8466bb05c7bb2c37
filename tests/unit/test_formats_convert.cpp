// llama2.c checkpoint/tokenizer readers and the Llama GGUF export (llama2.c conversion, random
// models), checked against tiny synthetic files and against llama.cpp's own stories260K.gguf.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>
#include <vector>

#include "core/common/error.hpp"
#include "core/common/half.hpp"
#include "core/formats/gguf_file.hpp"
#include "core/formats/llama2c_checkpoint.hpp"
#include "core/formats/llama_gguf_export.hpp"
#include "core/formats/model_presets.hpp"

namespace loom {
namespace {

const std::string kData = LOOM_TEST_DATA;

std::string temp_path(const std::string& name) {
  return ::testing::TempDir() + "loom_convert_" + std::to_string(::getpid()) + "_" + name;
}

void write_file(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  std::fwrite(bytes.data(), 1, bytes.size(), f);
  std::fclose(f);
}

std::vector<uint8_t> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

template <typename T>
void append(std::vector<uint8_t>& b, T v) {
  const auto* p = reinterpret_cast<const uint8_t*>(&v);
  b.insert(b.end(), p, p + sizeof(T));
}

// A llama2.c checkpoint whose every weight float equals its index among the weights, so a
// view's first element tells where it starts. Unshared classifier (negative vocab_size).
// dim 8, hidden 12, 2 layers, 2 heads, 1 kv head (kv_dim 4), vocab 6, seq_len 4.
std::vector<uint8_t> synthetic_checkpoint(int64_t* n_floats) {
  std::vector<uint8_t> b;
  for (int32_t v : {8, 12, 2, 2, 1, -6, 4}) append(b, v);
  const int64_t n = 6 * 8 + 2 * 8 + 2 * 64 + 2 * 32 * 2 + 2 * 64 + 2 * 8 + 3 * 2 * 96 + 8 + 2 * 4 * 2 + 6 * 8;
  for (int64_t i = 0; i < n; ++i) append(b, static_cast<float>(i));
  *n_floats = n;
  return b;
}

std::vector<uint8_t> synthetic_tokenizer(const std::vector<std::string>& pieces) {
  std::vector<uint8_t> b;
  append<int32_t>(b, 7);
  float score = 0.0f;
  for (const auto& p : pieces) {
    append(b, score);
    score -= 1.5f;
    append(b, static_cast<int32_t>(p.size()));
    b.insert(b.end(), p.begin(), p.end());
  }
  return b;
}

const std::vector<std::string> kPieces = {"<unk>", "\n<s>\n", "\n</s>\n", "<0x0A>", " the", "a b"};

TEST(Llama2cCheckpoint, ViewsFollowTheLayout) {
  int64_t n = 0;
  const std::string path = temp_path("ck.bin");
  write_file(path, synthetic_checkpoint(&n));
  const Llama2cCheckpoint ck = Llama2cCheckpoint::open(path);
  const Llama2cConfig& c = ck.config();
  EXPECT_EQ(c.vocab_size, 6);
  EXPECT_FALSE(c.shared_classifier);
  EXPECT_EQ(c.kv_dim(), 4);
  // Region starts in floats: tok 0, rms_att 48, wq 64, wk 192, wv 256, wo 320, rms_ffn 448,
  // w1 464, w2 656, w3 848, rms_final 1040, freq_real 1048, freq_imag 1056, wcls 1064.
  EXPECT_EQ(ck.token_embedding()[0], 0.0f);
  EXPECT_EQ(ck.rms_att(1)[0], 56.0f);
  EXPECT_EQ(ck.wq(1)[0], 128.0f);
  EXPECT_EQ(ck.wk(1)[0], 224.0f);
  EXPECT_EQ(ck.wv(0)[0], 256.0f);
  EXPECT_EQ(ck.wo(1).size(), 64u);
  EXPECT_EQ(ck.wo(1)[0], 384.0f);
  EXPECT_EQ(ck.rms_ffn(0)[0], 448.0f);
  EXPECT_EQ(ck.w1(1)[0], 560.0f);
  EXPECT_EQ(ck.w2(0)[0], 656.0f);
  EXPECT_EQ(ck.w3(1)[95], 848.0f + 96 + 95);
  EXPECT_EQ(ck.rms_final()[0], 1040.0f);
  EXPECT_EQ(ck.freq_cis_imag()[0], 1056.0f);
  EXPECT_EQ(ck.wcls()[0], 1064.0f);
  EXPECT_EQ(ck.wcls().size(), 48u);
  EXPECT_EQ(n, 1112);
  EXPECT_THROW(ck.wq(2), Error);
  std::remove(path.c_str());
}

TEST(Llama2cCheckpoint, RejectsWrongSizesAndHeaders) {
  int64_t n = 0;
  const std::vector<uint8_t> good = synthetic_checkpoint(&n);
  const std::string path = temp_path("bad.bin");
  auto expect_error = [&](std::vector<uint8_t> b, const std::string& needle) {
    write_file(path, b);
    try {
      Llama2cCheckpoint::open(path);
      ADD_FAILURE() << "no error, expected '" << needle << "'";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).rfind(path + ": ", 0), 0u) << e.what();
    }
  };
  expect_error(std::vector<uint8_t>(good.begin(), good.end() - 4), "needs exactly " + std::to_string(good.size()));
  std::vector<uint8_t> longer = good;
  longer.push_back(0);
  expect_error(longer, "needs exactly");
  std::vector<uint8_t> shared = good;
  const int32_t vocab = 6;  // shared classifier: the trailing wcls makes the file too long
  std::memcpy(shared.data() + 20, &vocab, 4);
  expect_error(shared, "needs exactly " + std::to_string(good.size() - 48 * 4));
  std::vector<uint8_t> heads = good;
  const int32_t three = 3;
  std::memcpy(heads.data() + 12, &three, 4);
  expect_error(heads, "not a multiple of n_heads 3");
  std::vector<uint8_t> magic = good;
  std::memcpy(magic.data(), "24ka", 4);
  expect_error(magic, "legacy v0");
  expect_error(std::vector<uint8_t>(good.begin(), good.begin() + 20), "too short");
  std::remove(path.c_str());
}

TEST(Llama2cTokenizer, RestoresSentencePiecePieces) {
  const std::string path = temp_path("tok.bin");
  write_file(path, synthetic_tokenizer(kPieces));
  const Llama2cTokenizer tok = Llama2cTokenizer::read(path);
  ASSERT_EQ(tok.size(), 6);
  EXPECT_EQ(tok.max_token_length, 7);
  EXPECT_EQ(tok.pieces[1], "<s>");
  EXPECT_EQ(tok.pieces[2], "</s>");
  EXPECT_EQ(tok.pieces[4], "\xE2\x96\x81the");
  EXPECT_EQ(tok.pieces[5], "a\xE2\x96\x81" "b");
  EXPECT_EQ(tok.scores[5], -7.5f);
  const std::vector<SpmTokenType> types = {SpmTokenType::kUnknown, SpmTokenType::kControl, SpmTokenType::kControl,
                                           SpmTokenType::kByte,    SpmTokenType::kNormal,  SpmTokenType::kNormal};
  EXPECT_EQ(tok.types, types);
  EXPECT_EQ(tok.unk_id, 0);
  EXPECT_EQ(tok.bos_id, 1);
  EXPECT_EQ(tok.eos_id, 2);
  EXPECT_EQ(Llama2cTokenizer::read(path, 6).size(), 6);
  EXPECT_THROW(Llama2cTokenizer::read(path, 5), Error);  // trailing bytes
  EXPECT_THROW(Llama2cTokenizer::read(path, 7), Error);  // runs out
  std::remove(path.c_str());
}

TEST(LlamaGgufExport, Llama2cTensorsAreCopiedVerbatim) {
  int64_t n = 0;
  const std::string ck_path = temp_path("ck2.bin"), tok_path = temp_path("tok2.bin");
  write_file(ck_path, synthetic_checkpoint(&n));
  write_file(tok_path, synthetic_tokenizer(kPieces));
  const Llama2cCheckpoint ck = Llama2cCheckpoint::open(ck_path);
  const Llama2cTokenizer tok = Llama2cTokenizer::read(tok_path, 6);
  Llama2cConvertOptions opts;
  opts.name = "synthetic";
  opts.dtype = LOOM_DTYPE_BF16;
  const GgufFile f = GgufFile::from_bytes(llama2c_to_gguf(ck, tok, opts).to_bytes(), "synthetic");
  EXPECT_EQ(f.get_string("general.architecture", ""), "llama");
  EXPECT_EQ(f.get_int("general.file_type", -1), 32);
  EXPECT_EQ(f.get_int("llama.context_length", 0), 4);
  EXPECT_EQ(f.get_int("llama.rope.dimension_count", 0), 4);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv", 0), 1);
  EXPECT_EQ(f.tensors().size(), 3u + 2 * 9);
  auto check = [&](const std::string& name, std::vector<int64_t> dims, loom_dtype dtype, std::span<const float> src) {
    SCOPED_TRACE(name);
    const GgufTensorInfo& t = f.tensor(name);
    EXPECT_EQ(t.dims, dims);
    ASSERT_EQ(t.dtype, dtype);
    for (size_t i = 0; i < src.size(); ++i) {
      float v;
      if (dtype == LOOM_DTYPE_F32) {
        std::memcpy(&v, static_cast<const uint8_t*>(t.data) + 4 * i, 4);
        ASSERT_EQ(v, src[i]) << i;
      } else {
        uint16_t h;
        std::memcpy(&h, static_cast<const uint8_t*>(t.data) + 2 * i, 2);
        ASSERT_EQ(h, f32_to_bf16(src[i])) << i;
      }
    }
  };
  check("token_embd.weight", {8, 6}, LOOM_DTYPE_BF16, ck.token_embedding());
  check("output.weight", {8, 6}, LOOM_DTYPE_BF16, ck.wcls());
  check("output_norm.weight", {8}, LOOM_DTYPE_F32, ck.rms_final());
  check("blk.1.attn_q.weight", {8, 8}, LOOM_DTYPE_BF16, ck.wq(1));
  check("blk.1.attn_k.weight", {8, 4}, LOOM_DTYPE_BF16, ck.wk(1));
  check("blk.0.attn_v.weight", {8, 4}, LOOM_DTYPE_BF16, ck.wv(0));
  check("blk.1.attn_output.weight", {8, 8}, LOOM_DTYPE_BF16, ck.wo(1));
  check("blk.1.attn_norm.weight", {8}, LOOM_DTYPE_F32, ck.rms_att(1));
  check("blk.0.ffn_gate.weight", {8, 12}, LOOM_DTYPE_BF16, ck.w1(0));
  check("blk.1.ffn_down.weight", {12, 8}, LOOM_DTYPE_BF16, ck.w2(1));
  check("blk.1.ffn_up.weight", {8, 12}, LOOM_DTYPE_BF16, ck.w3(1));
  check("blk.0.ffn_norm.weight", {8}, LOOM_DTYPE_F32, ck.rms_ffn(0));
  // The tokenizer must match the checkpoint's vocab.
  const std::string short_tok = temp_path("tok3.bin");
  write_file(short_tok, synthetic_tokenizer({"<unk>", "<s>", "</s>"}));
  EXPECT_THROW(llama2c_to_gguf(ck, Llama2cTokenizer::read(short_tok), opts), Error);
  for (const auto& p : {ck_path, tok_path, short_tok}) std::remove(p.c_str());
}

// Our stories260K.gguf against llama.cpp's conversion of the same checkpoint.
TEST(Stories260K, MatchesTheLlamaCppConversion) {
  const GgufFile ours = GgufFile::open(kData + "/stories260K.gguf");
  const GgufFile ref = GgufFile::open(kData + "/stories260K.llamacpp.gguf");
  EXPECT_EQ(ours.tensors().size() + 1, ref.tensors().size());  // ref has output.weight
  for (const auto& t : ours.tensors()) {
    SCOPED_TRACE(t.name);
    const GgufTensorInfo& r = ref.tensor(t.name);
    EXPECT_EQ(t.dims, r.dims);
    EXPECT_EQ(t.dtype, r.dtype);
    ASSERT_EQ(t.nbytes, r.nbytes);
    EXPECT_EQ(std::memcmp(t.data, r.data, t.nbytes), 0);
  }
  const GgufTensorInfo& out = ref.tensor("output.weight");
  const GgufTensorInfo& emb = ours.tensor("token_embd.weight");
  ASSERT_EQ(out.nbytes, emb.nbytes);
  EXPECT_EQ(std::memcmp(out.data, emb.data, out.nbytes), 0);  // tied: a copy of the embedding
  EXPECT_EQ(ours.find_tensor("output.weight"), nullptr);
  for (const char* key : {"tokenizer.ggml.tokens", "tokenizer.ggml.scores", "tokenizer.ggml.token_type",
                          "tokenizer.ggml.model", "tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id",
                          "tokenizer.ggml.unknown_token_id", "general.architecture", "llama.embedding_length",
                          "llama.feed_forward_length", "llama.block_count", "llama.attention.head_count",
                          "llama.attention.head_count_kv", "llama.rope.dimension_count",
                          "llama.attention.layer_norm_rms_epsilon"}) {
    ASSERT_NE(ours.find(key), nullptr) << key;
    EXPECT_TRUE(*ours.find(key) == ref.get(key)) << key;
  }
  EXPECT_EQ(ours.get_string("general.name", ""), "stories260K");
  EXPECT_EQ(ours.get_int("llama.context_length", 0), 512);  // llama2.c seq_len (llama.cpp wrote 2048)
}

// Rebuilds stories260K.bin and tok512.bin from llama.cpp's GGUF (whose tensors are karpathy's
// verbatim) and checks that converting them reproduces tests/data/stories260K.gguf byte for byte.
TEST(Stories260K, ConverterReproducesTheCommittedFile) {
  const GgufFile ref = GgufFile::open(kData + "/stories260K.llamacpp.gguf");
  std::vector<uint8_t> ck;
  for (int32_t v : {64, 172, 5, 8, 4, 512, 512}) append(ck, v);
  auto add = [&](const std::string& name) {
    const GgufTensorInfo& t = ref.tensor(name);
    const auto* p = static_cast<const uint8_t*>(t.data);
    ck.insert(ck.end(), p, p + t.nbytes);
  };
  auto add_layers = [&](const char* what) {
    for (int l = 0; l < 5; ++l) add("blk." + std::to_string(l) + "." + what + ".weight");
  };
  add("token_embd.weight");
  for (const char* w : {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm", "ffn_gate",
                        "ffn_down", "ffn_up"}) {
    add_layers(w);
  }
  add("output_norm.weight");
  ck.resize(ck.size() + 2 * 512 * 4 * 4, 0);  // freq_cis_real/imag: not converted
  std::vector<std::string> pieces;
  for (const auto& v : ref.get("tokenizer.ggml.tokens").as_array().items) {
    // llama2.c stores the SentencePiece space marker U+2581 as a plain space.
    const std::string& piece = v.as_string();
    const std::string marker = "\xE2\x96\x81";
    std::string s;
    for (size_t i = 0; i < piece.size();) {
      if (piece.compare(i, marker.size(), marker) == 0) {
        s += ' ';
        i += marker.size();
      } else {
        s += piece[i++];
      }
    }
    pieces.push_back(s == "<s>" ? "\n<s>\n" : s == "</s>" ? "\n</s>\n" : s);
  }
  std::vector<uint8_t> tok;
  append<int32_t>(tok, 7);
  const auto& scores = ref.get("tokenizer.ggml.scores").as_array().items;
  for (size_t i = 0; i < pieces.size(); ++i) {
    append(tok, static_cast<float>(scores[i].as_float()));
    append(tok, static_cast<int32_t>(pieces[i].size()));
    tok.insert(tok.end(), pieces[i].begin(), pieces[i].end());
  }
  const std::string ck_path = temp_path("stories.bin"), tok_path = temp_path("tok512.bin");
  const std::string out_path = temp_path("stories.gguf");
  write_file(ck_path, ck);
  write_file(tok_path, tok);
  const Llama2cCheckpoint checkpoint = Llama2cCheckpoint::open(ck_path);
  Llama2cConvertOptions opts;
  opts.name = "stories260K";
  llama2c_to_gguf(checkpoint, Llama2cTokenizer::read(tok_path, 512), opts).write(out_path);
  EXPECT_TRUE(read_file(out_path) == read_file(kData + "/stories260K.gguf"));
  for (const auto& p : {ck_path, tok_path, out_path}) std::remove(p.c_str());
}

TEST(Stories260K, GreedyIdsFileIsWellFormed) {
  std::ifstream in(kData + "/greedy_from_bos_256.ids");
  std::vector<int> ids{std::istream_iterator<int>(in), std::istream_iterator<int>()};
  ASSERT_EQ(ids.size(), 256u);
  for (int id : ids) EXPECT_TRUE(id >= 0 && id < 512) << id;
}

TEST(RandomLlama, ShapesTokenizerAndStatistics) {
  const GgufFile vocab = GgufFile::open(kData + "/stories260K.gguf");
  RandomLlamaOptions opts;
  opts.shape = llama_preset("tiny");
  opts.dtype = LOOM_DTYPE_F16;
  opts.seed = 7;
  const GgufMetadata tokenizer = tokenizer_metadata(vocab);
  const std::vector<uint8_t> bytes = random_llama_gguf(opts, tokenizer).to_bytes();
  const GgufFile f = GgufFile::from_bytes(bytes, "random");
  EXPECT_EQ(f.get_int("llama.embedding_length", 0), 64);
  EXPECT_EQ(f.get_int("llama.block_count", 0), 2);
  EXPECT_EQ(f.get_int("llama.attention.head_count_kv", 0), 4);
  EXPECT_EQ(f.get_int("general.file_type", -1), 1);
  EXPECT_TRUE(f.get("tokenizer.ggml.tokens") == vocab.get("tokenizer.ggml.tokens"));
  EXPECT_EQ(f.tensors().size(), 3u + 2 * 9);
  EXPECT_EQ(f.tensor("output.weight").dims, (std::vector<int64_t>{64, 512}));
  EXPECT_EQ(f.tensor("blk.1.attn_k.weight").dims, (std::vector<int64_t>{64, 32}));
  EXPECT_EQ(f.tensor("blk.1.ffn_down.weight").dims, (std::vector<int64_t>{172, 64}));
  const GgufTensorInfo& norm = f.tensor("blk.0.ffn_norm.weight");
  EXPECT_EQ(norm.dtype, LOOM_DTYPE_F32);
  for (int i = 0; i < 64; ++i) EXPECT_EQ(static_cast<const float*>(norm.data)[i], 1.0f);
  const GgufTensorInfo& w = f.tensor("blk.0.ffn_gate.weight");
  ASSERT_EQ(w.dtype, LOOM_DTYPE_F16);
  double sum = 0, sq = 0, max_abs = 0;
  const int64_t n = 64 * 172;
  for (int64_t i = 0; i < n; ++i) {
    uint16_t h;
    std::memcpy(&h, static_cast<const uint8_t*>(w.data) + 2 * i, 2);
    const double v = f16_to_f32(h);
    sum += v;
    sq += v * v;
    max_abs = std::max(max_abs, std::fabs(v));
  }
  EXPECT_NEAR(sum / n, 0.0, 0.001);
  EXPECT_NEAR(std::sqrt(sq / n), 0.02, 0.001);
  EXPECT_LE(max_abs, 0.02 * std::sqrt(3.0) + 1e-4);
  // Same seed, same bytes; another seed, other weights; tied drops output.weight.
  EXPECT_TRUE(random_llama_gguf(opts, tokenizer).to_bytes() == bytes);
  opts.seed = 8;
  opts.shape.tied_output = true;
  const GgufFile g = GgufFile::from_bytes(random_llama_gguf(opts, tokenizer).to_bytes(), "random2");
  EXPECT_EQ(g.find_tensor("output.weight"), nullptr);
  EXPECT_NE(std::memcmp(g.tensor("blk.0.ffn_gate.weight").data, w.data, w.nbytes), 0);
}

// A Mixtral-style preset writes llama.cpp's MoE layout: the expert keys, a stacked tensor per
// projection {in, out, experts} in the file's dtype, the router in f32, no dense MLP.
TEST(RandomLlama, MixtralPresetWritesStackedExperts) {
  const GgufFile vocab = GgufFile::open(kData + "/stories260K.gguf");
  RandomLlamaOptions opts;
  opts.shape = llama_preset("mixtral-tiny");
  opts.dtype = LOOM_DTYPE_F16;
  const GgufFile f = GgufFile::from_bytes(random_llama_gguf(opts, tokenizer_metadata(vocab)).to_bytes(), "moe");
  EXPECT_EQ(f.get_string("general.architecture", ""), "llama");
  EXPECT_EQ(f.get_int("llama.expert_count", 0), 4);
  EXPECT_EQ(f.get_int("llama.expert_used_count", 0), 2);
  EXPECT_EQ(f.tensors().size(), 3u + 2 * 10);
  EXPECT_EQ(f.find_tensor("blk.0.ffn_gate.weight"), nullptr);
  const GgufTensorInfo& router = f.tensor("blk.1.ffn_gate_inp.weight");
  EXPECT_EQ(router.dtype, LOOM_DTYPE_F32);
  EXPECT_EQ(router.dims, (std::vector<int64_t>{64, 4}));
  EXPECT_EQ(f.tensor("blk.1.ffn_gate_exps.weight").dims, (std::vector<int64_t>{64, 128, 4}));
  EXPECT_EQ(f.tensor("blk.1.ffn_up_exps.weight").dims, (std::vector<int64_t>{64, 128, 4}));
  EXPECT_EQ(f.tensor("blk.1.ffn_down_exps.weight").dims, (std::vector<int64_t>{128, 64, 4}));
  EXPECT_EQ(f.tensor("blk.1.ffn_down_exps.weight").dtype, LOOM_DTYPE_F16);
  const LlamaShape big = llama_preset("mixtral-1b");
  EXPECT_EQ(big.n_experts, 8);
  EXPECT_EQ(big.n_experts_used, 2);
  LlamaShape bad = llama_preset("mixtral-tiny");
  bad.n_experts_used = 5;
  try {
    bad.validate();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("experts used 5 is not in 1..4"), std::string::npos) << e.what();
  }
}

TEST(ModelPresets, PresetsAndDimsSpecs) {
  const LlamaShape b8 = llama_preset("llama-8b");
  EXPECT_EQ(b8.dim, 4096);
  EXPECT_EQ(b8.hidden_dim, 14336);
  EXPECT_EQ(b8.n_kv_heads, 8);
  EXPECT_EQ(b8.context_length, 8192);
  EXPECT_EQ(llama_preset("llama-1b").n_layers, 16);
  EXPECT_EQ(llama_preset("llama-125m").n_kv_heads, 12);
  try {
    llama_preset("llama-70b");
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("tiny, llama-125m, llama-1b, llama-8b"), std::string::npos) << e.what();
  }
  const LlamaShape s = parse_llama_dims("dim=32,hidden=64,layers=1,heads=4");
  EXPECT_EQ(s.n_kv_heads, 4);
  EXPECT_EQ(s.context_length, 2048);
  EXPECT_FALSE(s.rope_freq_base.has_value());
  const LlamaShape r = parse_llama_dims("dim=32,hidden=64,layers=1,heads=4,kv_heads=2,ctx=128,rope_base=500000,eps=1e-6");
  EXPECT_EQ(r.n_kv_heads, 2);
  EXPECT_EQ(*r.rope_freq_base, 500000.0f);
  EXPECT_EQ(r.rms_eps, 1e-6f);
  EXPECT_THROW(parse_llama_dims("dim=32,hidden=64,layers=1"), Error);             // no heads
  EXPECT_THROW(parse_llama_dims("dim=30,hidden=64,layers=1,heads=4"), Error);     // 30 % 4
  EXPECT_THROW(parse_llama_dims("dim=32,hidden=64,layers=1,heads=4,kv_heads=3"), Error);
  EXPECT_THROW(parse_llama_dims("dim=32,hidden=64,layers=1,heads=4,foo=1"), Error);
  EXPECT_THROW(parse_llama_dims("dim=x,hidden=64,layers=1,heads=4"), Error);
  EXPECT_THROW(parse_llama_dims("dim=12,hidden=64,layers=1,heads=4"), Error);     // head size 3
}

}  // namespace
}  // namespace loom
