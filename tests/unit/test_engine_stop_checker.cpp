// StopChecker on text that arrives in pieces: held back while it may still begin a stop string,
// released once it cannot, cut at the first stop string to appear (or, with include_stop, cut
// right after it, as vLLM's include_stop_str_in_output does).
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/engine/stop_checker.hpp"

namespace loom {
namespace {

// Feeds the pieces in order; returns everything emitted and whether a stop matched (flushing the
// held text at the end when none did, as the engine does at the length limit).
std::pair<std::string, bool> run(StopChecker& c, const std::vector<std::string>& pieces) {
  std::string out;
  for (const std::string& p : pieces) {
    const StopChecker::Result r = c.push(p);
    out += r.text;
    if (r.stopped) return {out, true};
  }
  return {out + c.flush(), false};
}

TEST(StopChecker, CutsBeforeTheStopAcrossPieces) {
  StopChecker c({"END"});
  EXPECT_EQ(c.push("abc E").text, "abc ");  // "E" may begin "END": held back
  const StopChecker::Result r = c.push("ND tail");
  EXPECT_TRUE(r.stopped);
  EXPECT_EQ(r.text, "");  // the held "E" was the stop's start: nothing more is released
}

TEST(StopChecker, IncludeStopKeepsTheMatchedStringAndNothingAfter) {
  StopChecker c({"END"}, /*include_stop=*/true);
  EXPECT_EQ(run(c, {"abc E", "ND tail"}), std::make_pair(std::string("abc END"), true));
  StopChecker plain({"END"});
  EXPECT_EQ(run(plain, {"abc E", "ND tail"}), std::make_pair(std::string("abc "), true));
}

TEST(StopChecker, TheFirstStopInTheTextWinsThenTheFirstListed) {
  // "b" appears before "a": the cut is at "b" whatever the list order.
  StopChecker c1({"a", "b"}, true);
  EXPECT_EQ(run(c1, {"xxbyya"}), std::make_pair(std::string("xxb"), true));
  // Two stops starting at the same place: the first listed decides what is included.
  StopChecker c2({"ab", "abc"}, true);
  EXPECT_EQ(run(c2, {"zabcd"}), std::make_pair(std::string("zab"), true));
  StopChecker c3({"abc", "ab"}, true);
  EXPECT_EQ(run(c3, {"zabcd"}), std::make_pair(std::string("zabc"), true));
  StopChecker c4({"abc", "ab"});
  EXPECT_EQ(run(c4, {"zabcd"}), std::make_pair(std::string("z"), true));
}

TEST(StopChecker, HeldTextIsReleasedWhenNoStopCompletes) {
  StopChecker c({"END"}, true);
  const StopChecker::Result r = c.push("xEN");
  EXPECT_EQ(r.text, "x");
  EXPECT_FALSE(r.stopped);
  EXPECT_EQ(c.push("D!").text, "END");  // completes the stop: included, the rest dropped
  StopChecker d({"END"}, true);
  EXPECT_EQ(run(d, {"xEN", "x"}), std::make_pair(std::string("xENx"), false));
  StopChecker e({"END"}, true);
  EXPECT_EQ(run(e, {"xEN"}), std::make_pair(std::string("xEN"), false));  // flushed at the end
}

}  // namespace
}  // namespace loom
