// UTF-8 classification used by the tokenizers and the streaming detokenizer.
#include <gtest/gtest.h>

#include <string>

#include "core/tokenizer/utf8.hpp"

namespace loom {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

TEST(Utf8, LeadLength) {
  EXPECT_EQ(utf8_lead_length('a'), 1u);
  EXPECT_EQ(utf8_lead_length(0x80), 1u);  // stray continuation byte: a unit of its own
  EXPECT_EQ(utf8_lead_length(0xC3), 2u);
  EXPECT_EQ(utf8_lead_length(0xE2), 3u);
  EXPECT_EQ(utf8_lead_length(0xF0), 4u);
  EXPECT_EQ(utf8_lead_length(0xFF), 4u);
}

TEST(Utf8, NextClassifiesCompleteIncompleteInvalid) {
  auto next = [](const std::string& s) { return utf8_next(s); };
  EXPECT_EQ(next("a").status, Utf8Status::kComplete);
  EXPECT_EQ(next("\xC3\xA9x").length, 2u);
  EXPECT_EQ(next("\xF0\x9F\x98\x80").status, Utf8Status::kComplete);
  EXPECT_EQ(next("\xF0\x9F\x98\x80").length, 4u);
  EXPECT_EQ(next("\xF0\x9F\x98").status, Utf8Status::kIncomplete);
  EXPECT_EQ(next("\xF0\x9F\x98").length, 3u);
  EXPECT_EQ(next("\xE2").status, Utf8Status::kIncomplete);
  // Maximal subparts: the bad byte is not swallowed.
  EXPECT_EQ(next("\xF0\x9F" "a").status, Utf8Status::kInvalid);
  EXPECT_EQ(next("\xF0\x9F" "a").length, 2u);
  EXPECT_EQ(next("\x80").status, Utf8Status::kInvalid);
  EXPECT_EQ(next("\xC0\xAF").length, 1u);  // overlong lead
  EXPECT_EQ(next("\xE0\x80").status, Utf8Status::kInvalid);  // overlong 3-byte
  EXPECT_EQ(next("\xED\xA0\x80").status, Utf8Status::kInvalid);  // surrogate
  EXPECT_EQ(next("\xF4\x90\x80\x80").status, Utf8Status::kInvalid);  // > U+10FFFF
  EXPECT_EQ(next("\xF5").status, Utf8Status::kInvalid);
}

TEST(Utf8, IsValid) {
  EXPECT_TRUE(utf8_is_valid(""));
  EXPECT_TRUE(utf8_is_valid("h\xC3\xA9llo \xF0\x9F\xA6\x99"));
  EXPECT_FALSE(utf8_is_valid("\xF0\x9F\xA6"));
  EXPECT_FALSE(utf8_is_valid("a\xFF"));
}

TEST(Utf8, CompletePrefixHoldsOnlyACompletableTail) {
  EXPECT_EQ(utf8_complete_prefix_length(""), 0u);
  EXPECT_EQ(utf8_complete_prefix_length("abc"), 3u);
  EXPECT_EQ(utf8_complete_prefix_length("ab\xF0\x9F"), 2u);
  EXPECT_EQ(utf8_complete_prefix_length("ab\xF0\x9F\xA6\x99"), 6u);
  EXPECT_EQ(utf8_complete_prefix_length("\xFF"), 1u);          // invalid: decided
  EXPECT_EQ(utf8_complete_prefix_length("\xF0\x9F" "a"), 3u);  // cannot complete any more
}

TEST(Utf8, SanitizeReplacesEachMaximalSubpartOnce) {
  EXPECT_EQ(utf8_sanitize("ok"), "ok");
  EXPECT_EQ(utf8_sanitize("a\xF0\x9F" "b"), "a" + kFffd + "b");
  EXPECT_EQ(utf8_sanitize("\x80\x80"), kFffd + kFffd);
  EXPECT_EQ(utf8_sanitize("x\xE2\x96"), "x" + kFffd);
  EXPECT_EQ(utf8_sanitize("\xE2\x96\x81"), "\xE2\x96\x81");
}

}  // namespace
}  // namespace loom
