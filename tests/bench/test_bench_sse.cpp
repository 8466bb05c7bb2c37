// The incremental SSE parser and the OpenAI chunk reader: events come out whole however the
// bytes are split, with LF, CRLF or CR line ends, comments and multi-line data.
#include <gtest/gtest.h>

#include "tools/bench/openai_chunk.hpp"
#include "tools/bench/sse_parser.hpp"

namespace loom::bench {
namespace {

std::vector<SseEvent> feed_in_pieces(const std::string& stream, size_t piece) {
  SseParser parser;
  std::vector<SseEvent> all;
  for (size_t i = 0; i < stream.size(); i += piece) {
    for (SseEvent& e : parser.feed(std::string_view(stream).substr(i, piece))) all.push_back(e);
  }
  return all;
}

TEST(SseParser, EveryPieceSizeGivesTheSameEvents) {
  const std::string stream =
      "\xEF\xBB\xBF: keep-alive comment\r\n\r\n"
      "data: {\"a\":1}\r\n\r\n"
      "event: error\ndata: line one\ndata:line two\n\n"
      "data\r\rdata: [DONE]\n\n"
      "id: 7\nretry: 10\n\n"
      "data: unterminated";
  for (size_t piece = 1; piece <= stream.size(); ++piece) {
    const std::vector<SseEvent> events = feed_in_pieces(stream, piece);
    ASSERT_EQ(events.size(), 4u) << "piece " << piece;
    EXPECT_EQ(events[0].event, "");
    EXPECT_EQ(events[0].data, "{\"a\":1}");
    EXPECT_EQ(events[1].event, "error");
    EXPECT_EQ(events[1].data, "line one\nline two");
    EXPECT_EQ(events[2].data, "");  // a bare "data" field: an empty data line
    EXPECT_EQ(events[3].data, "[DONE]");
  }
}

TEST(SseParser, CrAtThePieceEndThenLfIsOneLineEnd) {
  SseParser parser;
  EXPECT_TRUE(parser.feed("data: x\r").empty());
  EXPECT_TRUE(parser.feed("\n").empty());  // the LF of the CRLF, not a blank line
  const std::vector<SseEvent> events = parser.feed("\r\n");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].data, "x");
}

TEST(OpenAiChunk, ReadsCompletionChatUsageDoneAndErrors) {
  ChunkInfo c = classify_chunk({"", R"({"choices":[{"index":0,"text":"Once"}]})"});
  EXPECT_EQ(c.text, "Once");
  EXPECT_FALSE(c.error);
  c = classify_chunk({"", R"({"choices":[{"delta":{"role":"assistant"}}]})"});
  EXPECT_EQ(c.text, "");
  c = classify_chunk({"", R"({"choices":[{"delta":{"content":"hi","reasoning_content":null}}]})"});
  EXPECT_EQ(c.text, "hi");
  c = classify_chunk({"", R"({"choices":[],"usage":{"prompt_tokens":12,"completion_tokens":5}})"});
  EXPECT_EQ(c.text, "");
  EXPECT_EQ(c.prompt_tokens, 12);
  EXPECT_EQ(c.completion_tokens, 5);
  c = classify_chunk({"", R"({"choices":[{"text":"x"}],"usage":null})"});
  EXPECT_FALSE(c.completion_tokens);
  EXPECT_TRUE(classify_chunk({"", "[DONE]"}).done);
  c = classify_chunk({"", R"({"error":{"message":"too long","code":400}})"});
  EXPECT_EQ(c.error, "too long");
  c = classify_chunk({"error", R"({"detail":"x"})"});
  ASSERT_TRUE(c.error);
  c = classify_chunk({"", "not json"});
  ASSERT_TRUE(c.error);
  EXPECT_NE(c.error->find("not json"), std::string::npos);
}

}  // namespace
}  // namespace loom::bench
