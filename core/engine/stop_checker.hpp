// Stop strings on streamed text: text that could still be the beginning of a stop string is held
// back until it either completes the stop (generation ends there; the stop string itself is
// returned only with include_stop) or can no longer become one (then it is released). The stop
// that appears first in the text wins; of several that start at the same place, the first listed.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace loom {

class StopChecker {
 public:
  explicit StopChecker(std::vector<std::string> stops, bool include_stop = false);

  struct Result {
    std::string text;      // safe to emit now
    bool stopped = false;  // a stop string matched; `text` ends right before it (include_stop: with it)
  };

  // Adds newly decoded text.
  Result push(std::string_view text);
  // At the end of generation (not by a stop string): everything still held back.
  std::string flush();

 private:
  // Length of the longest suffix of held_ that is a proper prefix of some stop string.
  size_t partial_match_length() const;

  std::vector<std::string> stops_;
  bool include_stop_ = false;
  std::string held_;  // text not yet emitted; never contains a whole stop string
};

}  // namespace loom
