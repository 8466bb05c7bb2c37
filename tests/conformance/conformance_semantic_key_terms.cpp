// The embedding cache's key-term guard (plugins/semantic_cache/common/key_terms.hpp) and its
// threshold calibration (threshold_calibration.hpp), as pure functions: what each rule takes
// from a question, which near misses it refuses and which rewordings it lets through, and the
// grid row a labelled set picks.
#include <gtest/gtest.h>

#include "common/key_terms.hpp"
#include "common/threshold_calibration.hpp"

namespace loom::semantic {
namespace {

using C = KeyTermConflict;

C conflict(std::string_view a, std::string_view b) { return key_terms_conflict(key_terms_of(a), key_terms_of(b)); }

TEST(SemanticKeyTerms, ReadsNumbersNegationTermsAndRoles) {
  const KeyTerms k = key_terms_of("Can't I convert 1,000 Celsius to Fahrenheit twice on the 10th?");
  EXPECT_EQ(k.numbers, (std::vector<std::string>{"10", "1000", "2"}));
  EXPECT_TRUE(k.negated);
  EXPECT_EQ(k.terms, (std::set<std::string>{"celsius", "convert", "fahrenheit"}));
  EXPECT_EQ(k.sources, (std::set<std::string>{"celsius"}));
  EXPECT_EQ(k.targets, (std::set<std::string>{"fahrenheit"}));
  EXPECT_EQ(key_terms_of("What’s the best way to learn C++ and C#?").terms,
            (std::set<std::string>{"best", "c#", "c++", "learn"}));
  EXPECT_EQ(key_terms_of("I won't go without it").negated, false);  // two negators
}

TEST(SemanticKeyTerms, StemsMeetAcrossInflections) {
  for (const auto& [a, b] : std::vector<std::pair<const char*, const char*>>{
           {"rinse", "rinsing"}, {"minute", "minutes"}, {"replace", "replaced"}, {"city", "cities"},
           {"shipping", "ship"}, {"vaccination", "vaccinate"}, {"virus", "viruses"}})
    EXPECT_EQ(key_terms_of(a).terms, key_terms_of(b).terms) << a << " / " << b;
}

TEST(SemanticKeyTerms, RefusesTheNearMissesTheCosineCannotSee) {
  EXPECT_EQ(conflict("What is 15 percent of 80?", "What is 25 percent of 80?"), C::kNumber);
  EXPECT_EQ(conflict("Is 2 ibuprofen tablets too many?", "Is two ibuprofen tablets too many?"), C::kNone);
  EXPECT_EQ(conflict("How do I unclog a sink without chemicals?", "How do I unclog a sink with chemicals?"),
            C::kNegation);
  EXPECT_EQ(conflict("How do I reset my router?", "How do I reset my modem?"), C::kReplacement);
  EXPECT_EQ(conflict("What is the capital of Australia?", "What is the capital of Austria?"), C::kReplacement);
  EXPECT_EQ(conflict("How do I convert Celsius to Fahrenheit?", "How do I convert Fahrenheit to Celsius?"),
            C::kDirection);
  EXPECT_EQ(conflict("Are there flights from Sydney to Perth?", "Are there flights from Perth to Sydney?"),
            C::kDirection);
}

TEST(SemanticKeyTerms, LetsRewordingsThrough) {
  EXPECT_EQ(conflict("What is the capital of Australia?", "Which city is Australia's capital?"), C::kNone);
  EXPECT_EQ(conflict("How do I reverse a list in Python?", "What's the way to reverse a Python list?"), C::kNone);
  EXPECT_EQ(conflict("How do I sort a dictionary by value?", "Sort a dict by its values."), C::kNone);
  EXPECT_EQ(conflict("How many kilometres are in 10 miles?", "Convert 10 miles to kilometres."), C::kNone);
  EXPECT_EQ(conflict("What should I do if my dog doesn't eat?", "My dog won't eat, what should I do?"), C::kNone);
  // What the guard costs: a synonym is a replacement too.
  EXPECT_EQ(conflict("What is the largest planet?", "What is the biggest planet?"), C::kReplacement);
}

TEST(SemanticThresholdCalibration, PicksTheLowestRowWithinTheTarget) {
  const std::vector<LabelledPair> pairs = {
      {0.97, true, true},  {0.91, true, true},  {0.85, true, true},
      {0.95, false, false},  // a swap the guard refuses: never a hit
      {0.88, true, false},   // a near miss the guard lets through: a false hit up to 0.88
  };
  const Calibration c = calibrate_threshold(pairs, 0.02);
  ASSERT_EQ(c.rows.size(), 30u);
  EXPECT_DOUBLE_EQ(c.rows.front().threshold, 0.70);
  EXPECT_DOUBLE_EQ(c.rows.back().threshold, 0.99);
  const CalibrationRow& at_088 = c.rows[18];
  EXPECT_DOUBLE_EQ(at_088.threshold, 0.88);
  EXPECT_EQ(at_088.hits, 3);
  EXPECT_EQ(at_088.false_hits, 1);
  EXPECT_EQ(at_088.same_pairs, 3);
  ASSERT_TRUE(c.threshold);
  EXPECT_DOUBLE_EQ(*c.threshold, 0.89);
  EXPECT_DOUBLE_EQ(c.rows[19].same_hit_rate(), 2.0 / 3.0);
  // A looser target takes the lowest row: 1 false hit in 4 is within a third.
  EXPECT_DOUBLE_EQ(*calibrate_threshold(pairs, 1.0 / 3.0).threshold, 0.70);
  // No row with a hit and no false hit: no choice.
  EXPECT_FALSE(calibrate_threshold({{0.999, true, false}}, 0.02).threshold);
}

}  // namespace
}  // namespace loom::semantic
