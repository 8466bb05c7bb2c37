// Choosing the cosine threshold from a labelled set of question pairs: for each threshold on a
// grid, a pair is a hit when its cosine reaches the threshold and the key-term guard lets it
// through; a hit of a pair labelled different (same = false) is a false hit. The choice is the
// lowest threshold whose false hits are at most target x hits, with at least one hit: the lowest
// because every step up loses paraphrase hits, and "of hits" because what a user meets is the
// share of cached answers that answer another question.
// Pure: the caller embeds the pairs and runs the guard.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace loom::semantic {

struct LabelledPair {
  double cosine = 0;       // of the two questions' embeddings
  bool guard_ok = true;    // the key-term guard lets the pair through (true when it is off)
  bool same = false;       // the label: the same question reworded
};

// One grid row.
struct CalibrationRow {
  double threshold = 0;
  int64_t hits = 0;        // pairs accepted: cosine >= threshold and guard_ok
  int64_t false_hits = 0;  // accepted pairs labelled different
  int64_t same_pairs = 0;  // pairs labelled same, accepted or not
  double same_hit_rate() const { return same_pairs == 0 ? 0.0 : static_cast<double>(hits - false_hits) / same_pairs; }
  double false_share() const { return hits == 0 ? 0.0 : static_cast<double>(false_hits) / hits; }
};

struct Calibration {
  std::vector<CalibrationRow> rows;  // the grid, ascending
  std::optional<double> threshold;   // the choice; nullopt when no row qualifies
};

// The grid lo, lo + step, ... <= hi in hundredths (0.70 .. 0.99 step 0.01 by default), each value
// computed as an integer over 100 so that 0.93 is the double nearest 0.93.
inline Calibration calibrate_threshold(const std::vector<LabelledPair>& pairs, double target_false_share,
                                       int lo_percent = 70, int hi_percent = 99) {
  Calibration c;
  int64_t same_pairs = 0;
  for (const LabelledPair& p : pairs) same_pairs += p.same ? 1 : 0;
  for (int pct = lo_percent; pct <= hi_percent; ++pct) {
    CalibrationRow r;
    r.threshold = pct / 100.0;
    r.same_pairs = same_pairs;
    for (const LabelledPair& p : pairs) {
      if (p.cosine < r.threshold || !p.guard_ok) continue;
      ++r.hits;
      if (!p.same) ++r.false_hits;
    }
    const bool within = static_cast<double>(r.false_hits) <= target_false_share * static_cast<double>(r.hits);
    if (!c.threshold && r.hits > 0 && within) c.threshold = r.threshold;
    c.rows.push_back(r);
  }
  return c;
}

}  // namespace loom::semantic
