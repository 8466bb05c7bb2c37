// The key-term guard: a check, after the cosine test, that two questions agree on the words that
// change an answer. Sentence embeddings (all-MiniLM-L6-v2 and its kind) place "How do I reset my
// router?" and "... my modem?" as close as two rewordings of one question: on the project's
// labelled set (tests/data/semantic), cosine alone leaves 5-44% of hits false at every threshold
// from 0.70 to 0.97 (docs/benchmarks.md). Four rules, each a kind of near miss the cosine cannot
// see:
//   numbers    the numbers (digit runs with decimals, and the number words one..twenty, tens,
//              hundred, thousand, half, quarter) must agree as multisets: "15%" vs "25%";
//   negation   the parity of negators (not, no, never, without, ...n't, ...) must agree;
//   replacement each side having a content term the other lacks is a swap ("router" for "modem",
//              "Java" for "C#"), not a rewording; a term that only adds ("... on the field") is
//              allowed, as are terms that are prefixes of each other ("dict", "dictionary");
//   direction  a term that is the source of a relation (X to/into/for Y, from X) on one side and
//              its target on the other: "Celsius to Fahrenheit" vs "Fahrenheit to Celsius".
// Content terms are lowercased words less a list of function words, each cut to a crude stem so
// that "rinse"/"rinsing" and "minute"/"minutes" meet. Synonyms ("biggest"/"largest") fail the
// replacement rule, which costs paraphrase hits; on the labelled set, the differing terms' own
// embeddings did not separate synonyms from swaps ("Monday"/"Tuesday" 0.87, "east"/"west" 0.80,
// against a median of 0.33 for both), so the rule does not consult the encoder.
// Pure functions of the text, ASCII-lowercased; bytes >= 0x80 are letters.
#pragma once

#include <algorithm>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace loom::semantic {

// What the guard compares of one question.
struct KeyTerms {
  std::vector<std::string> numbers;  // normalised ("1,000" -> "1000", "10th" -> "10", "two" -> "2"), sorted
  bool negated = false;              // an odd number of negators
  std::set<std::string> terms;       // stems of the content words
  std::set<std::string> sources;     // stems of X in "X to/into/for Y" and "from X"
  std::set<std::string> targets;     // stems of Y in "X to/into/for Y"
};

enum class KeyTermConflict { kNone, kNumber, kNegation, kReplacement, kDirection };

inline const char* conflict_name(KeyTermConflict c) {
  switch (c) {
    case KeyTermConflict::kNone: return "none";
    case KeyTermConflict::kNumber: return "number";
    case KeyTermConflict::kNegation: return "negation";
    case KeyTermConflict::kReplacement: return "replacement";
    case KeyTermConflict::kDirection: return "direction";
  }
  return "none";
}

namespace key_terms_detail {

inline const std::unordered_set<std::string_view>& negators() {
  static const std::unordered_set<std::string_view> s = {"not",     "no",     "never",   "without", "none",
                                                         "nothing", "nobody", "neither", "nor",     "cannot",
                                                         "unable"};
  return s;
}

inline const std::unordered_map<std::string_view, std::string_view>& number_words() {
  static const std::unordered_map<std::string_view, std::string_view> m = {
      {"zero", "0"},     {"one", "1"},       {"two", "2"},        {"three", "3"},     {"four", "4"},
      {"five", "5"},     {"six", "6"},       {"seven", "7"},      {"eight", "8"},     {"nine", "9"},
      {"ten", "10"},     {"eleven", "11"},   {"twelve", "12"},    {"thirteen", "13"}, {"fourteen", "14"},
      {"fifteen", "15"}, {"sixteen", "16"},  {"seventeen", "17"}, {"eighteen", "18"}, {"nineteen", "19"},
      {"twenty", "20"},  {"thirty", "30"},   {"forty", "40"},     {"fifty", "50"},    {"sixty", "60"},
      {"seventy", "70"}, {"eighty", "80"},   {"ninety", "90"},    {"hundred", "100"}, {"thousand", "1000"},
      {"first", "1"},    {"second", "2"},    {"third", "3"},      {"fourth", "4"},    {"fifth", "5"},
      {"half", "1/2"},   {"quarter", "1/4"}, {"double", "2"},     {"twice", "2"}};
  return m;
}

// Function words, and the words of how a question is asked rather than what it asks ("tell me",
// "what's the way to", "tips for"), which rewordings add and drop freely.
inline const std::unordered_set<std::string_view>& stop_words() {
  static const std::unordered_set<std::string_view> s = {
      "a", "i", "an", "the", "of", "in", "on", "at", "to", "for", "with", "from", "by", "into", "onto", "over",
      "under", "about", "as", "and", "or", "but", "if", "then", "than", "so", "me", "my", "mine", "you", "your",
      "yours", "we", "our", "us", "it", "its", "this", "that", "these", "those", "there", "here", "he", "she",
      "they", "them", "his", "her", "their", "is", "are", "was", "were", "be", "been", "being", "am", "do", "does",
      "did", "doing", "done", "have", "has", "had", "having", "can", "could", "should", "would", "will", "shall",
      "may", "might", "must", "how", "what", "why", "when", "where", "which", "who", "whom", "whose", "whats",
      "hows", "get", "gets", "getting", "got", "make", "makes", "making", "let", "lets", "way", "ways", "usual",
      "usually", "normal", "normally", "really", "just", "also", "any", "some", "all", "each", "every", "much",
      "many", "more", "most", "very", "too", "please", "tell", "show", "explain", "help", "tip", "tips", "method",
      "process", "formula", "possible", "ok", "okay", "fine", "anyone", "someone", "something", "thing", "things",
      "go", "going", "want", "need", "needs", "needed", "like", "use", "using", "used", "one", "between", "up",
      "down", "out", "off"};
  return s;
}

inline bool is_letter(unsigned char c) { return (c >= 'a' && c <= 'z') || c >= 0x80; }
inline bool is_digit(unsigned char c) { return c >= '0' && c <= '9'; }
inline bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

// Lowercased tokens: numbers (digits, with ".", "," or "/" between digit runs, an ordinal suffix
// kept) and words (letters, one apostrophe part, a trailing "+"/"#" as in C++ and C#).
inline std::vector<std::string> tokens(std::string_view text) {
  std::string s;
  s.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text.compare(i, 3, "\xE2\x80\x99") == 0) {  // U+2019, the typographic apostrophe
      s += '\'';
      i += 2;
      continue;
    }
    const char c = text[i];
    s += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  std::vector<std::string> out;
  size_t i = 0;
  auto at = [&](size_t k) { return k < s.size() ? static_cast<unsigned char>(s[k]) : 0; };
  while (i < s.size()) {
    const size_t start = i;
    if (is_digit(at(i))) {
      while (is_digit(at(i))) ++i;
      while ((at(i) == '.' || at(i) == ',' || at(i) == '/') && is_digit(at(i + 1))) {
        ++i;
        while (is_digit(at(i))) ++i;
      }
      for (std::string_view ord : {"st", "nd", "rd", "th"})
        if (s.compare(i, 2, ord) == 0) {
          i += 2;
          break;
        }
    } else if (is_letter(at(i))) {
      while (is_letter(at(i))) ++i;
      if (at(i) == '\'' && is_letter(at(i + 1))) {
        ++i;
        while (is_letter(at(i))) ++i;
      }
      while (at(i) == '+' || at(i) == '#') ++i;
    } else {
      ++i;
      continue;
    }
    out.push_back(s.substr(start, i - start));
  }
  return out;
}

// A crude stem: one suffix off, then a final "e" and one of a final double consonant.
inline std::string stem(std::string w) {
  static const std::pair<std::string_view, std::string_view> kSuffixes[] = {
      {"ation", "ate"}, {"ence", ""}, {"ance", ""}, {"ment", ""}, {"ies", "y"},
      {"ing", ""},      {"ed", ""},   {"ly", ""},   {"es", ""},   {"s", ""}};
  for (const auto& [suffix, replacement] : kSuffixes) {
    if (!ends_with(w, suffix) || w.size() < suffix.size() + 3) continue;
    if (suffix == "s" && (ends_with(w, "ss") || ends_with(w, "us") || ends_with(w, "is"))) continue;
    w.resize(w.size() - suffix.size());
    w += replacement;
    break;
  }
  if (w.size() > 3 && w.back() == 'e') w.pop_back();
  const bool double_consonant = w.size() > 3 && w[w.size() - 1] == w[w.size() - 2] &&
                                std::string_view("aeiou").find(w.back()) == std::string_view::npos;
  if (double_consonant) w.pop_back();
  return w;
}

inline bool is_stop(std::string_view t) { return stop_words().count(t) != 0; }

}  // namespace key_terms_detail

inline KeyTerms key_terms_of(std::string_view text) {
  namespace d = key_terms_detail;
  KeyTerms k;
  int negators = 0;
  const std::vector<std::string> toks = d::tokens(text);
  for (std::string t : toks) {
    if (d::is_digit(static_cast<unsigned char>(t[0]))) {
      std::erase(t, ',');
      for (std::string_view ord : {"st", "nd", "rd", "th"})
        if (d::ends_with(t, ord)) t.resize(t.size() - 2);
      k.numbers.push_back(t);
      continue;
    }
    if (d::ends_with(t, "n't") || d::negators().count(t) != 0) {  // don't, won't: the auxiliary goes too
      ++negators;
      continue;
    }
    if (const auto n = d::number_words().find(t); n != d::number_words().end()) {
      k.numbers.emplace_back(n->second);
      continue;
    }
    if (const size_t q = t.find('\''); q != std::string::npos) t.resize(q);  // what's, australia's
    if (d::is_stop(t)) continue;
    k.terms.insert(d::stem(t));
  }
  std::sort(k.numbers.begin(), k.numbers.end());
  k.negated = negators % 2 == 1;
  // Roles around relation words. [i-1] X, [i] to/into/for, then articles, then Y.
  auto after_articles = [&](size_t j) {
    static const std::unordered_set<std::string_view> kArticles = {"a",  "an",    "the", "my",  "your", "our",
                                                                   "their", "his", "her", "its", "this", "that"};
    while (j < toks.size() && kArticles.count(toks[j]) != 0) ++j;
    return j;
  };
  for (size_t i = 0; i < toks.size(); ++i) {
    const std::string& t = toks[i];
    if (t == "to" || t == "into" || t == "for") {
      if (i > 0 && !d::is_stop(toks[i - 1]) && d::negators().count(toks[i - 1]) == 0)
        k.sources.insert(d::stem(toks[i - 1]));
      const size_t j = after_articles(i + 1);
      if (j < toks.size() && !d::is_stop(toks[j])) k.targets.insert(d::stem(toks[j]));
    } else if (t == "from") {
      const size_t j = after_articles(i + 1);
      if (j < toks.size() && !d::is_stop(toks[j])) k.sources.insert(d::stem(toks[j]));
    }
  }
  return k;
}

// The first rule that a and b break, in the order of the header comment; kNone when they agree.
inline KeyTermConflict key_terms_conflict(const KeyTerms& a, const KeyTerms& b) {
  if (a.numbers != b.numbers) return KeyTermConflict::kNumber;
  if (a.negated != b.negated) return KeyTermConflict::kNegation;
  // Two terms of at least 3 letters, one a prefix of the other, are taken as the same term.
  auto same = [](const std::string& x, const std::string& y) {
    return std::min(x.size(), y.size()) >= 3 && (x.starts_with(y) || y.starts_with(x));
  };
  std::vector<std::string> only_a, only_b;
  std::set_difference(a.terms.begin(), a.terms.end(), b.terms.begin(), b.terms.end(), std::back_inserter(only_a));
  std::set_difference(b.terms.begin(), b.terms.end(), a.terms.begin(), a.terms.end(), std::back_inserter(only_b));
  auto unmatched = [&](const std::vector<std::string>& mine, const std::vector<std::string>& theirs) {
    return std::any_of(mine.begin(), mine.end(), [&](const std::string& x) {
      return std::none_of(theirs.begin(), theirs.end(), [&](const std::string& y) { return same(x, y); });
    });
  };
  if (unmatched(only_a, only_b) && unmatched(only_b, only_a)) return KeyTermConflict::kReplacement;
  auto meet = [](const std::set<std::string>& x, const std::set<std::string>& y) {
    return std::any_of(x.begin(), x.end(), [&](const std::string& v) { return y.count(v) != 0; });
  };
  if (meet(a.sources, b.targets) || meet(a.targets, b.sources)) return KeyTermConflict::kDirection;
  return KeyTermConflict::kNone;
}

}  // namespace loom::semantic
