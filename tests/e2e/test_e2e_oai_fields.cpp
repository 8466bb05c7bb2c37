// The OpenAI fields of issue 22 through the real server on the demo model: echo + logprobs
// against a teacher-forced pass, list-of-prompts order, best_of, logit_bias, penalties,
// stop_token_ids, GET /v1/models/{id} and unknown fields.
#include <gtest/gtest.h>

#include <future>
#include <cmath>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "e2e/e2e_server.hpp"

namespace loom::test {
namespace {

using nlohmann::json;

json post_ok(const LiveServer& server, const std::string& route, const json& body) {
  const HttpResponse r = server.post(route, body);
  EXPECT_EQ(r.status, 200u) << r.body;
  return json::parse(r.body);
}

struct Generated {
  std::vector<int32_t> tokens;
  std::vector<float> logprobs;  // of each sampled token
};

// Greedy generation straight on the engine, for the token ids the HTTP side does not return.
Generated generate(Engine& engine, std::vector<int32_t> prompt, int32_t max_tokens) {
  Generated out;
  std::mutex m;
  std::promise<void> done;
  GenerateRequest r;
  r.prompt = std::move(prompt);
  r.sampling.temperature = 0.0f;
  r.sampling.max_tokens = max_tokens;
  r.sampling.logprobs = 0;
  r.sampling.ignore_eos = true;
  r.sink = [&](GenerationOutput&& o) {
    std::lock_guard lock(m);
    out.tokens.insert(out.tokens.end(), o.token_ids.begin(), o.token_ids.end());
    for (const RowLogprobs& l : o.logprobs) out.logprobs.push_back(l.sampled.logprob);
    if (o.finish) done.set_value();
  };
  engine.submit(std::move(r));
  done.get_future().wait();
  return out;
}

class OaiFields : public ::testing::Test {
 protected:
  LiveServer server_{demo_config(R"(
[scheduler]
plugin = "fcfs"
[cache]
plugin = "radix"
kv_memory = "16MiB"
block_size = 4
)")};
};

// lm-eval's multiple-choice scoring: the prompt's logprobs must be those of generating the same
// tokens one at a time (here: the engine's own greedy continuation, teacher-forced back in).
TEST_F(OaiFields, EchoLogprobsEqualTeacherForcedPass) {
  const std::vector<int32_t> prompt{1, 403, 261};
  const Generated g = generate(server_.engine(), prompt, 12);
  ASSERT_EQ(g.tokens.size(), 12u);
  std::vector<int32_t> forced = prompt;
  forced.insert(forced.end(), g.tokens.begin(), g.tokens.end());
  // Twice: the second run finds the prompt's blocks in the prefix cache, which it must not use.
  for (int run = 0; run < 2; ++run) {
    SCOPED_TRACE(run);
    const json r = post_ok(server_, "/v1/completions",
                           {{"prompt", forced}, {"echo", true}, {"logprobs", 1}, {"max_tokens", 1}, {"temperature", 0}});
    const json& lp = r["choices"][0]["logprobs"];
    ASSERT_EQ(lp["token_logprobs"].size(), forced.size() + 1);
    EXPECT_TRUE(lp["token_logprobs"][0].is_null());
    EXPECT_TRUE(lp["top_logprobs"][0].is_null());
    for (size_t i = 0; i < g.tokens.size(); ++i) {
      EXPECT_FLOAT_EQ(lp["token_logprobs"][prompt.size() + i].get<float>(), g.logprobs[i]) << "token " << i;
    }
    // text_offset counts the token texts from the start of the echoed text.
    int64_t offset = 0;
    for (size_t i = 0; i < lp["tokens"].size(); ++i) {
      EXPECT_EQ(lp["text_offset"][i].get<int64_t>(), offset);
      offset += static_cast<int64_t>(lp["tokens"][i].get<std::string>().size());
    }
    EXPECT_EQ(r["usage"]["prompt_tokens"], forced.size());
  }
  // vLLM's prompt_logprobs: the same scores beside the text, keyed by token id.
  const json v = post_ok(server_, "/v1/completions",
                         {{"prompt", forced}, {"prompt_logprobs", 0}, {"max_tokens", 1}, {"temperature", 0}});
  const json& pl = v["choices"][0]["prompt_logprobs"];
  ASSERT_EQ(pl.size(), forced.size());
  EXPECT_TRUE(pl[0].is_null());
  for (size_t i = 0; i < g.tokens.size(); ++i) {
    const json& e = pl[prompt.size() + i][std::to_string(g.tokens[i])];
    EXPECT_FLOAT_EQ(e["logprob"].get<float>(), g.logprobs[i]);
    EXPECT_EQ(e["rank"], 1);  // greedy: the argmax
  }
}

TEST_F(OaiFields, EchoWithoutLogprobsReturnsPromptThenCompletion) {
  const json plain = post_ok(server_, "/v1/completions", {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}});
  const json echo = post_ok(server_, "/v1/completions",
                            {{"prompt", "Once upon a time"}, {"max_tokens", 6}, {"temperature", 0}, {"echo", true}});
  EXPECT_EQ(echo["choices"][0]["text"], "Once upon a time" + plain["choices"][0]["text"].get<std::string>());
}

TEST_F(OaiFields, ListOfPromptsInOrder) {
  const std::vector<std::string> prompts{"Once upon", "The cat", "A dog"};
  const json r = post_ok(server_, "/v1/completions",
                         {{"prompt", prompts}, {"n", 2}, {"max_tokens", 5}, {"temperature", 0}});
  ASSERT_EQ(r["choices"].size(), 6u);
  int32_t prompt_tokens = 0;
  for (size_t p = 0; p < prompts.size(); ++p) {
    const json one = post_ok(server_, "/v1/completions", {{"prompt", prompts[p]}, {"max_tokens", 5}, {"temperature", 0}});
    prompt_tokens += one["usage"]["prompt_tokens"].get<int32_t>();
    for (size_t i = 0; i < 2; ++i) {
      const json& c = r["choices"][p * 2 + i];
      EXPECT_EQ(c["index"], p * 2 + i);
      EXPECT_EQ(c["text"], one["choices"][0]["text"]) << prompts[p];
    }
  }
  EXPECT_EQ(r["usage"]["prompt_tokens"], prompt_tokens);
  EXPECT_EQ(r["usage"]["completion_tokens"], 30);
  // Token-id prompts in a batch too.
  const json ids = post_ok(server_, "/v1/completions",
                           {{"prompt", json::array({json::array({1, 403}), json::array({1, 261})})}, {"max_tokens", 2}});
  EXPECT_EQ(ids["choices"].size(), 2u);
}

// Streamed, a batch gives the same texts under the same indices, echo opening each choice.
TEST_F(OaiFields, StreamedBatchAndEchoMatchTheWholeResponse) {
  const json body = {{"prompt", {"Once upon", "The cat"}}, {"n", 2}, {"max_tokens", 5}, {"temperature", 0}, {"echo", true}};
  const json whole = post_ok(server_, "/v1/completions", body);
  json streamed_body = body;
  streamed_body["stream"] = true;
  const HttpResponse r = server_.post("/v1/completions", streamed_body);
  ASSERT_EQ(r.status, 200u);
  std::map<int, std::string> text;
  std::map<int, std::string> first_chunk;
  for (const std::string& data : sse_data_events(r.body)) {
    if (data == "[DONE]") break;
    const json chunk = json::parse(data);
    for (const json& c : chunk["choices"]) {
      const int i = c["index"].get<int>();
      if (!first_chunk.count(i)) first_chunk[i] = c["text"];
      text[i] += c["text"].get<std::string>();
    }
  }
  ASSERT_EQ(text.size(), 4u) << r.body;
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(text[i], whole["choices"][i]["text"]) << i;
    EXPECT_EQ(first_chunk[i].rfind(i < 2 ? "Once upon" : "The cat", 0), 0u) << first_chunk[i];
  }
}

TEST_F(OaiFields, BestOfReturnsHighestCumulativeLogprob) {
  const json all = post_ok(server_, "/v1/completions",
                           {{"prompt", "Once"}, {"n", 4}, {"seed", 11}, {"max_tokens", 8}, {"logprobs", 0}});
  size_t best = 0;
  double best_sum = -1e30;
  for (size_t i = 0; i < 4; ++i) {
    double sum = 0;
    for (const json& v : all["choices"][i]["logprobs"]["token_logprobs"]) sum += v.get<double>();
    if (sum > best_sum) best_sum = sum, best = i;
  }
  const json one = post_ok(server_, "/v1/completions",
                           {{"prompt", "Once"}, {"n", 1}, {"best_of", 4}, {"seed", 11}, {"max_tokens", 8}});
  ASSERT_EQ(one["choices"].size(), 1u);
  EXPECT_EQ(one["choices"][0]["text"], all["choices"][best]["text"]);
  EXPECT_TRUE(one["choices"][0]["logprobs"].is_null());  // not asked for: not returned
  EXPECT_EQ(one["usage"]["completion_tokens"], 32);      // every candidate counts
}

TEST_F(OaiFields, PenaltiesAndBiasChangeOutput) {
  const std::vector<int32_t> prompt{1, 403};
  const Generated g = generate(server_.engine(), prompt, 24);
  const json base = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", 0}, {"ignore_eos", true}};
  const json plain = post_ok(server_, "/v1/completions", base);
  // A -100 bias on the greedy first token: the first token changes.
  json biased = base;
  biased["logit_bias"] = {{std::to_string(g.tokens[0]), -100}};
  biased["logprobs"] = 0;
  biased["max_tokens"] = 1;
  json unbiased = biased;
  unbiased.erase("logit_bias");
  const json b = post_ok(server_, "/v1/completions", biased)["choices"][0]["logprobs"];
  const json u = post_ok(server_, "/v1/completions", unbiased)["choices"][0]["logprobs"];
  EXPECT_NE(b["tokens"][0], u["tokens"][0]);
  // The logprobs are those of the biased row (processors come before logprobs): the greedy
  // token after the bias is the most likely of that row.
  EXPECT_LE(u["token_logprobs"][0].get<double>(), 0.0);
  EXPECT_LE(b["token_logprobs"][0].get<double>(), 0.0);
  // The greedy text repeats tokens, so the penalties move logits it reads. The demo model's
  // margins are wide, so the check is on the logprobs: at the last position (same text so far),
  // a token's processed logprob minus the plain one differs between alternatives exactly by the
  // penalty's definition. Token texts stand for ids (the demo vocabulary's pieces are distinct).
  std::set<int32_t> distinct(g.tokens.begin(), g.tokens.end());
  ASSERT_LT(distinct.size(), g.tokens.size()) << "the plain greedy text should repeat a token";
  json scored = base;
  scored["logprobs"] = 5;
  const json plain_lp = post_ok(server_, "/v1/completions", scored)["choices"][0]["logprobs"];
  for (const auto& [field, value] : std::vector<std::pair<std::string, double>>{
           {"frequency_penalty", 0.5}, {"presence_penalty", 0.5}, {"repetition_penalty", 1.5}}) {
    SCOPED_TRACE(field);
    json body = scored;
    body[field] = value;
    const json lp = post_ok(server_, "/v1/completions", body)["choices"][0]["logprobs"];
    if (lp["tokens"] != plain_lp["tokens"]) continue;  // the text changed: an effect, nothing to align
    // At every position (same text so far), two alternatives' logprob gap moves by the
    // difference of their penalties: the normalisation cancels in a gap.
    bool some_penalised = false;
    std::map<std::string, int> count;  // occurrences in the output before this position
    for (size_t pos = 0; pos < lp["tokens"].size(); ++pos) {
      const json& a = plain_lp["top_logprobs"][pos];
      const json& b = lp["top_logprobs"][pos];
      std::vector<std::string> shared;
      for (const auto& [tok, v] : a.items())
        if (b.contains(tok)) shared.push_back(tok);
      auto pen = [&](const std::string& t) {
        const int c = count.count(t) ? count.at(t) : 0;
        return field == "frequency_penalty" ? -value * c : c > 0 ? -value : 0.0;
      };
      for (size_t i = 1; i < shared.size(); ++i) {
        const std::string &x = shared[0], &y = shared[i];
        const double moved = (b[x].get<double>() - b[y].get<double>()) - (a[x].get<double>() - a[y].get<double>());
        // Repetition scales the logit itself (unknown here): only checked for moving.
        if (field != "repetition_penalty") {
          EXPECT_NEAR(moved, pen(x) - pen(y), 1e-4) << x << " vs " << y << " at " << pos;
        }
        some_penalised = some_penalised || std::abs(moved) > 1e-3;
      }
      ++count[lp["tokens"][pos].get<std::string>()];
    }
    EXPECT_TRUE(some_penalised) << "no alternative's logprob moved";
  }
}

TEST_F(OaiFields, IncludeStopStrInOutputKeepsTheStopString) {
  const std::vector<int32_t> prompt{1, 403};
  const json whole = post_ok(server_, "/v1/completions", {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}});
  const std::string text = whole["choices"][0]["text"];
  ASSERT_GE(text.size(), 6u) << text;
  // A stop string from the middle of the greedy text: its first occurrence ends the output.
  const std::string stop = text.substr(text.size() / 2, 2);
  const size_t at = text.find(stop);
  for (const bool include : {true, false}) {
    for (const bool stream : {false, true}) {
      json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"stop", stop}};
      body["include_stop_str_in_output"] = include;
      std::string got;
      if (stream) {
        body["stream"] = true;
        const HttpResponse r = server_.post("/v1/completions", body);
        ASSERT_EQ(r.status, 200u) << r.body;
        for (const std::string& data : sse_data_events(r.body)) {
          if (data == "[DONE]") break;
          const json chunk = json::parse(data);
          for (const json& c : chunk["choices"]) got += c["text"].get<std::string>();
        }
      } else {
        const json r = post_ok(server_, "/v1/completions", body);
        EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
        got = r["choices"][0]["text"];
      }
      EXPECT_EQ(got, text.substr(0, include ? at + stop.size() : at)) << "include " << include << " stream " << stream;
    }
  }
  const json chat = post_ok(server_, "/v1/chat/completions",
                            {{"messages", {{{"role", "user"}, {"content", "hi"}}}}, {"max_tokens", 8}, {"temperature", 0},
                             {"stop", "zzzz"}, {"include_stop_str_in_output", true}});
  EXPECT_TRUE(chat["choices"][0]["message"]["content"].is_string());
  const HttpResponse bad = server_.post("/v1/completions",
                                        {{"prompt", prompt}, {"max_tokens", 2}, {"include_stop_str_in_output", "yes"}});
  EXPECT_EQ(bad.status, 400u);
  EXPECT_NE(bad.body.find("include_stop_str_in_output"), std::string::npos) << bad.body;
}

TEST_F(OaiFields, StopTokenIdsEndTheChoice) {
  const std::vector<int32_t> prompt{1, 403};
  const Generated g = generate(server_.engine(), prompt, 6);
  // The first occurrence of the third token ends the choice there, its text not returned.
  size_t first = 0;
  while (g.tokens[first] != g.tokens[2]) ++first;
  const json r = post_ok(server_, "/v1/completions",
                         {{"prompt", prompt}, {"max_tokens", 6}, {"temperature", 0}, {"stop_token_ids", {g.tokens[2]}}});
  EXPECT_EQ(r["choices"][0]["finish_reason"], "stop");
  EXPECT_EQ(r["usage"]["completion_tokens"], first + 1);
}

// min_tokens bans the stop tokens (and EOS) until reached: a stop token that would end the
// choice at its third token lets it run to at least min_tokens.
TEST_F(OaiFields, MinTokensHoldsOffStopTokens) {
  const std::vector<int32_t> prompt{1, 403};
  const Generated g = generate(server_.engine(), prompt, 3);
  const json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0}, {"stop_token_ids", {g.tokens[2]}}};
  const json stopped = post_ok(server_, "/v1/completions", body);
  ASSERT_LE(stopped["usage"]["completion_tokens"].get<int>(), 3);
  json held_body = body;
  held_body["min_tokens"] = 8;
  const json held = post_ok(server_, "/v1/completions", held_body);
  EXPECT_GE(held["usage"]["completion_tokens"].get<int>(), 8);
  // Up to the banned token the text is the greedy one: nothing else changed.
  const std::string a = stopped["choices"][0]["text"], b = held["choices"][0]["text"];
  EXPECT_EQ(b.substr(0, a.size()), a);
}

TEST_F(OaiFields, ModelById) {
  const HttpResponse ok = server_.client().get("/v1/models/stories260K");
  ASSERT_EQ(ok.status, 200u);
  EXPECT_EQ(json::parse(ok.body)["id"], "stories260K");
  const HttpResponse missing = server_.client().get("/v1/models/gpt-4");
  ASSERT_EQ(missing.status, 404u);
  const json e = json::parse(missing.body)["error"];
  EXPECT_EQ(e["code"], "model_not_found");
  EXPECT_NE(e["message"].get<std::string>().find("gpt-4"), std::string::npos);
}

TEST_F(OaiFields, UnknownAndUnsupportedFieldsAre400) {
  for (const auto& [field, value] : std::vector<std::pair<std::string, json>>{
           {"suffix", "end"}, {"frobnicate", 1}, {"logit_bias", {{"99999", 1}}}}) {
    json body = {{"prompt", "Once"}, {"max_tokens", 2}};
    body[field] = value;
    const HttpResponse r = server_.post("/v1/completions", body);
    EXPECT_EQ(r.status, 400u) << field;
    EXPECT_NE(r.body.find(field == "logit_bias" ? "logit_bias: token id 99999" : field), std::string::npos) << r.body;
  }
}

}  // namespace
}  // namespace loom::test
