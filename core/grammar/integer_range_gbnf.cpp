#include "core/grammar/integer_range_gbnf.hpp"

#include <algorithm>
#include <vector>

namespace loom {
namespace {

constexpr int kMaxDigits = 18;

uint64_t pow10(int n) {
  uint64_t p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

int digits(uint64_t x) {
  int d = 1;
  while (x >= 10) x /= 10, ++d;
  return d;
}

std::string digit_class(uint64_t a, uint64_t b) {
  if (a == b) return "\"" + std::to_string(a) + "\"";
  return "[" + std::to_string(a) + "-" + std::to_string(b) + "]";
}

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

// Exactly w digits (leading zeros allowed) with a value in [lo, hi], hi < 10^w.
std::string padded(uint64_t lo, uint64_t hi, int w) {
  if (w == 0) return "";
  const uint64_t p = pow10(w - 1);
  const uint64_t a = lo / p, b = hi / p, lr = lo % p, hr = hi % p;
  auto cat = [](const std::string& x, const std::string& y) { return y.empty() ? x : x + " " + y; };
  if (a == b) return cat(digit_class(a, a), padded(lr, hr, w - 1));
  std::vector<std::string> alts;
  uint64_t full_lo = a, full_hi = b;
  if (lr != 0) {
    alts.push_back(cat(digit_class(a, a), padded(lr, p - 1, w - 1)));
    full_lo = a + 1;
  }
  std::string last;
  if (hr != p - 1) {
    last = cat(digit_class(b, b), padded(0, hr, w - 1));
    full_hi = b - 1;
  }
  if (full_lo <= full_hi) {
    alts.push_back(cat(digit_class(full_lo, full_hi), w > 1 ? "[0-9]{" + std::to_string(w - 1) + "}" : ""));
  }
  if (!last.empty()) alts.push_back(last);
  return alternatives(alts);
}

// Non-negative integers without leading zeros in [lo, hi].
std::string range(uint64_t lo, uint64_t hi) {
  std::vector<std::string> alts;
  for (int d = digits(lo); d <= digits(hi); ++d) {
    const uint64_t sub_lo = std::max(lo, d == 1 ? 0 : pow10(d - 1));
    const uint64_t sub_hi = std::min(hi, pow10(d) - 1);
    alts.push_back(padded(sub_lo, sub_hi, d));
  }
  return alternatives(alts);
}

// Non-negative integers >= n (up to kMaxDigits digits).
std::string at_least(uint64_t n) {
  const int d = digits(n);
  std::string out = range(n, pow10(d) - 1);
  if (d < kMaxDigits) out = "(" + out + " | [1-9] [0-9]{" + std::to_string(d) + "," + std::to_string(kMaxDigits - 1) + "})";
  return out;
}

}  // namespace

std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  auto u = [](int64_t v) { return static_cast<uint64_t>(v < 0 ? -v : v); };
  if (lo && hi) {
    if (*lo >= 0) return range(u(*lo), u(*hi));
    if (*hi < 0) return "\"-\" " + range(u(*hi), u(*lo));
    return "(\"-\" " + range(1, u(*lo)) + " | " + range(0, u(*hi)) + ")";
  }
  if (lo) {
    if (*lo >= 0) return at_least(u(*lo));
    return "(\"-\" " + range(1, u(*lo)) + " | " + at_least(0) + ")";
  }
  if (*hi >= 0) return "(\"-\" " + at_least(1) + " | " + range(0, u(*hi)) + ")";
  return "\"-\" " + at_least(u(*hi));
}

}  // namespace loom
