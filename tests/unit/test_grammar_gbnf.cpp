// GBNF text -> grammar IR -> incremental matcher: sentences accepted, others rejected, errors at
// the right line and column.
#include <gtest/gtest.h>

#include "core/grammar/gbnf_parser.hpp"
#include "tests/unit/grammar_support.hpp"

namespace loom::test {
namespace {

TEST(GrammarGbnf, LiteralsClassesGroupsAndRepetition) {
  const auto g = gbnf("root ::= \"a\" [b-d]+ (\"x\" | \"yz\")?\n");
  EXPECT_TRUE(full_match(g, "ab"));
  EXPECT_TRUE(full_match(g, "abcdbx"));
  EXPECT_TRUE(full_match(g, "acyz"));
  EXPECT_FALSE(full_match(g, "a"));
  EXPECT_FALSE(full_match(g, "abe"));
  EXPECT_FALSE(full_match(g, "abxx"));
  EXPECT_FALSE(full_match(g, "aby"));  // a prefix, not a sentence
  EXPECT_TRUE(prefix_ok(g, "aby"));
  EXPECT_FALSE(prefix_ok(g, "b"));
}

TEST(GrammarGbnf, BoundedRepetition) {
  const auto g = gbnf("root ::= [0-9]{2,3} \"-\" \"ab\"{2} [x]{1,}");
  EXPECT_TRUE(full_match(g, "12-ababx"));
  EXPECT_TRUE(full_match(g, "123-ababxxx"));
  EXPECT_FALSE(full_match(g, "1-ababx"));
  EXPECT_FALSE(full_match(g, "1234-ababx"));
  EXPECT_FALSE(full_match(g, "12-abx"));
  EXPECT_FALSE(full_match(g, "12-abab"));
}

TEST(GrammarGbnf, RulesCommentsAndLines) {
  const auto g = gbnf(R"g(# a list of words
root ::= word ("," ws word)*   # at least one
word ::=
  [a-z]+
ws ::= | " "
list ::= "(" (
    word |
    "-"
  ) ")"
)g");
  EXPECT_TRUE(full_match(g, "ab,cd, ef"));
  EXPECT_FALSE(full_match(g, "ab,,cd"));
  EXPECT_FALSE(full_match(g, "ab,  cd"));
}

TEST(GrammarGbnf, EscapesAndUtf8Classes) {
  const auto g = gbnf(R"(root ::= "\"" [^"\\\x00-\x1F]* "\"" "\n" "\u00e9" [\u4e00-\u9fff]?)");
  EXPECT_TRUE(full_match(g, "\"h\xC3\xA9llo \xE2\x82\xAC\"\n\xC3\xA9"));
  EXPECT_TRUE(full_match(g, "\"\"\n\xC3\xA9\xE4\xB8\x80"));
  EXPECT_FALSE(full_match(g, "\"a\"b\"\n\xC3\xA9"));
  EXPECT_FALSE(full_match(g, "\"\x01\"\n\xC3\xA9"));
  // A token may end inside a character: the first byte of U+4E00 is a valid prefix.
  EXPECT_TRUE(prefix_ok(g, "\"\"\n\xC3\xA9\xE4"));
  EXPECT_FALSE(full_match(g, "\"\"\n\xC3\xA9\xE4"));
  EXPECT_FALSE(prefix_ok(g, "\"\"\n\xC3\xA9\xC3"));  // a 2-byte lead: outside the range
  // Negated classes never produce surrogates or bytes that are not UTF-8.
  const auto any = gbnf("root ::= .");
  EXPECT_TRUE(full_match(any, "\xF4\x8F\xBF\xBF"));
  EXPECT_FALSE(prefix_ok(any, "\xED\xA0"));  // U+D800.. is not a character
  EXPECT_FALSE(prefix_ok(any, "\xFF"));
  EXPECT_FALSE(prefix_ok(any, "\x80"));
}

TEST(GrammarGbnf, CompleteAndContinue) {
  GrammarMatcher m(gbnf("root ::= \"ab\" | \"abc\""));
  EXPECT_FALSE(m.is_complete());
  EXPECT_TRUE(m.accept_bytes("ab"));
  EXPECT_TRUE(m.is_complete());
  EXPECT_TRUE(m.can_continue());
  EXPECT_TRUE(m.accept_byte('c'));
  EXPECT_TRUE(m.is_complete());
  EXPECT_FALSE(m.can_continue());
  EXPECT_FALSE(m.accept_byte('c'));  // rejected: the state is unchanged
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarGbnf, RightRecursionKeepsOneFlatStack) {
  GrammarMatcher m(gbnf("root ::= [a]* \"b\""));
  ASSERT_TRUE(m.accept_byte('a'));
  const StackSet after_one = m.stacks();
  ASSERT_EQ(after_one.size(), 2u);  // the star's body (returning to "b") and the "b"
  for (int i = 0; i < 1000; ++i) ASSERT_TRUE(m.accept_byte('a'));
  EXPECT_TRUE(m.stacks() == after_one);
  EXPECT_TRUE(m.accept_byte('b'));
  EXPECT_TRUE(m.is_complete());
}

TEST(GrammarGbnf, ErrorsNameLineAndColumn) {
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"a\" @"); }), "line 1, column 14: unexpected '@'");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"a\"\nx ::= [a-"); }), "line 2, column 7: unterminated character class");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"a\n\""); }), "line 1, column 10: unterminated string literal");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= a\na ::= b"); }), "line 2, column 7: rule 'b' is used but never defined");
  EXPECT_EQ(error_of([] { parse_gbnf("root = \"a\""); }), "line 1, column 6: expected '::=' after rule name 'root'");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= [z-a]"); }), "line 1, column 11: character range is out of order");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"a\"{3,2}"); }), "line 1, column 18: repetition '{3,2}' has max < min");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"\\q\""); }), "line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= (\"a\""); }), "line 1, column 14: expected ')'");
  EXPECT_EQ(error_of([] { parse_gbnf("a ::= \"x\""); }), "the grammar has no 'root' rule");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= \"a\"\nroot ::= \"b\""); }), "line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= root \"a\" | \"b\""); }),
            "rule 'root' is left recursive (it can begin with itself)");
  EXPECT_EQ(error_of([] { parse_gbnf("root ::= x root | \"b\"\nx ::= \"\" | \"c\""); }),
            "rule 'root' is left recursive (it can begin with itself)");
}

}  // namespace
}  // namespace loom::test
