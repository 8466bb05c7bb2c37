#include "core/grammar/number_range_gbnf.hpp"

#include <cctype>
#include <cstdint>
#include <vector>

#include "core/common/error.hpp"
#include "core/grammar/integer_range_gbnf.hpp"

namespace loom {
namespace {

constexpr int kMaxDigits = 18;
const std::string kAnyDigits = "[0-9]{0," + std::to_string(kMaxDigits - 1) + "}";

// A bound on a digit string's value as a fraction 0.d1d2...: `digits` without trailing zeros.
struct FracBound {
  std::string digits;
  bool exclusive = false;
};

std::string alternatives(const std::vector<std::string>& alts) {
  if (alts.empty()) return "";
  if (alts.size() == 1) return alts[0];
  std::string out = "(";
  for (size_t i = 0; i < alts.size(); ++i) out += (i ? " | " : "") + alts[i];
  return out + ")";
}

std::string digit_class(int a, int b) {
  if (a == b) return "\"" + std::to_string(a) + "\"";
  return "[" + std::to_string(a) + "-" + std::to_string(b) + "]";
}

FracBound rest(const std::optional<FracBound>& b) {
  return FracBound{b->digits.empty() ? "" : b->digits.substr(1), b->exclusive};
}

bool zero_allowed(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi) {
  const bool above_lo = !lo || (lo->digits.empty() && !lo->exclusive);
  const bool below_hi = !hi || !hi->digits.empty() || !hi->exclusive;
  return above_lo && below_hi;
}

// Non-empty digit strings whose fraction value lies within lo / hi (nullopt: unbounded; an
// upper bound is below 1, so "no upper bound" means any digits). "" when none does.
std::string digits_between(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi);

// Digit strings, empty included (value 0), within the bounds; nullopt when none is.
std::optional<std::string> tail_between(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi) {
  if (!lo && !hi) return kAnyDigits;
  const std::string some = digits_between(lo, hi);
  const bool zero = zero_allowed(lo, hi);
  if (some.empty()) return zero ? std::optional<std::string>("\"\"") : std::nullopt;
  return zero ? "(" + some + ")?" : some;
}

std::string digits_between(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi) {
  // Bounds at zero end the recursion (their rest would be themselves).
  if (hi && hi->digits.empty()) {
    const bool lo_allows_zero = !lo || (lo->digits.empty() && !lo->exclusive);
    return !hi->exclusive && lo_allows_zero ? "\"0\"{1," + std::to_string(kMaxDigits) + "}" : "";
  }
  if (lo && lo->digits.empty()) {
    if (!lo->exclusive) return digits_between(std::nullopt, hi);
    if (!hi) return "\"0\"{0," + std::to_string(kMaxDigits - 1) + "} [1-9] " + kAnyDigits;
  }
  if (!lo && !hi) return "[0-9] " + kAnyDigits;
  const int l = lo && !lo->digits.empty() ? lo->digits[0] - '0' : 0;
  const int h = hi ? (hi->digits.empty() ? 0 : hi->digits[0] - '0') : 9;
  std::vector<std::string> alts;
  // Strictly inside at the first digit: the rest is free.
  const int inner_lo = lo ? l + 1 : l;
  const int inner_hi = hi ? h - 1 : h;
  if (inner_lo <= inner_hi) alts.push_back(digit_class(inner_lo, inner_hi) + " " + kAnyDigits);
  // On a bound's digit: the rest is bounded by the rest of that bound.
  if (lo && hi && l == h) {
    if (auto t = tail_between(rest(lo), rest(hi))) alts.push_back(digit_class(l, l) + " " + *t);
  } else {
    if (lo && l <= h) {
      if (auto t = tail_between(rest(lo), std::nullopt)) alts.push_back(digit_class(l, l) + " " + *t);
    }
    if (hi && h >= l) {
      if (auto t = tail_between(std::nullopt, rest(hi))) alts.push_back(digit_class(h, h) + " " + *t);
    }
  }
  return alternatives(alts);
}

// The fraction part of the text (absent, or "." and digits) within the bounds; nullopt: none.
std::optional<std::string> fraction_between(const std::optional<FracBound>& lo, const std::optional<FracBound>& hi) {
  const std::string some = (!lo && !hi) ? "[0-9]{1," + std::to_string(kMaxDigits) + "}" : digits_between(lo, hi);
  const bool zero = zero_allowed(lo, hi);
  if (some.empty()) return zero ? std::optional<std::string>("") : std::nullopt;
  return "(\".\" " + some + ")" + (zero ? "?" : "");
}

int64_t to_int(const std::string& digits) { return digits.empty() ? 0 : std::stoll(digits); }

// Non-negative values in [lo, hi] (hi nullopt: unbounded above): by integer part.
std::vector<std::string> non_negative(const DecimalBound& lo, const std::optional<DecimalBound>& hi) {
  const int64_t li = to_int(lo.integer);
  const FracBound lf{lo.fraction, lo.exclusive};
  std::vector<std::string> alts;
  auto add = [&](const std::string& integer, const std::optional<std::string>& fraction) {
    if (fraction) alts.push_back(fraction->empty() ? integer : integer + " " + *fraction);
  };
  if (!hi) {
    add("(" + integer_range_gbnf(li + 1, std::nullopt) + ")", fraction_between(std::nullopt, std::nullopt));
    add("\"" + std::to_string(li) + "\"", fraction_between(lf, std::nullopt));
    return alts;
  }
  const int64_t hi_int = to_int(hi->integer);
  const FracBound hf{hi->fraction, hi->exclusive};
  if (li == hi_int) {
    add("\"" + std::to_string(li) + "\"", fraction_between(lf, hf));
    return alts;
  }
  if (li + 1 <= hi_int - 1) {
    add("(" + integer_range_gbnf(li + 1, hi_int - 1) + ")", fraction_between(std::nullopt, std::nullopt));
  }
  add("\"" + std::to_string(li) + "\"", fraction_between(lf, std::nullopt));
  add("\"" + std::to_string(hi_int) + "\"", fraction_between(std::nullopt, hf));
  return alts;
}

DecimalBound zero(bool exclusive) { return DecimalBound{false, "", "", exclusive}; }

}  // namespace

int compare_decimal(const DecimalBound& a, const DecimalBound& b) {
  auto magnitude = [](const DecimalBound& x, const DecimalBound& y) {
    if (x.integer.size() != y.integer.size()) return x.integer.size() < y.integer.size() ? -1 : 1;
    if (x.integer != y.integer) return x.integer < y.integer ? -1 : 1;
    if (x.fraction != y.fraction) return x.fraction < y.fraction ? -1 : 1;  // no trailing zeros
    return 0;
  };
  const bool az = a.integer.empty() && a.fraction.empty(), bz = b.integer.empty() && b.fraction.empty();
  const bool an = a.negative && !az, bn = b.negative && !bz;
  if (an != bn) return an ? -1 : 1;
  return an ? -magnitude(a, b) : magnitude(a, b);
}

bool tighter_bound(const DecimalBound& a, const DecimalBound& b, bool lower) {
  const int c = compare_decimal(a, b);
  return (lower ? c > 0 : c < 0) || (c == 0 && a.exclusive && !b.exclusive);
}

DecimalBound decimal_bound(std::string_view text, bool exclusive) {
  DecimalBound out;
  out.exclusive = exclusive;
  size_t i = 0;
  if (i < text.size() && text[i] == '-') out.negative = true, ++i;
  std::string digits;
  int64_t point = -1;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i) {
    if (text[i] == '.') {
      if (point >= 0) throw Error("not a number: " + std::string(text));
      point = static_cast<int64_t>(digits.size());
    } else {
      digits += text[i];
    }
  }
  if (digits.empty()) throw Error("not a number: " + std::string(text));
  if (point < 0) point = static_cast<int64_t>(digits.size());
  if (i < text.size()) {
    if (text[i] != 'e' && text[i] != 'E') throw Error("not a number: " + std::string(text));
    try {
      point += std::stoll(std::string(text.substr(i + 1)));
    } catch (const std::exception&) {
      throw Error("not a number: " + std::string(text));
    }
  }
  // digits with the point after `point` of them: pad with zeros to place it.
  if (point < 0) digits.insert(0, static_cast<size_t>(-point), '0'), point = 0;
  if (point > static_cast<int64_t>(digits.size())) digits.append(static_cast<size_t>(point) - digits.size(), '0');
  out.integer = digits.substr(0, static_cast<size_t>(point));
  out.fraction = digits.substr(static_cast<size_t>(point));
  out.integer.erase(0, std::min(out.integer.find_first_not_of('0'), out.integer.size()));
  out.fraction.erase(out.fraction.find_last_not_of('0') + 1);
  if (out.integer.size() > kMaxDigits || out.fraction.size() > kMaxDigits) {
    throw Error("the bound " + std::string(text) + " has more than " + std::to_string(kMaxDigits) +
                " integer or fraction digits");
  }
  return out;
}

std::string number_range_gbnf(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi) {
  if (lo && hi) {
    const int c = compare_decimal(*lo, *hi);
    if (c > 0 || (c == 0 && (lo->exclusive || hi->exclusive))) throw Error("the number bounds leave no value");
  }
  const DecimalBound z = zero(false);
  std::vector<std::string> alts;
  // x >= 0: from max(lo, 0) to hi.
  const bool has_non_negative = !hi || compare_decimal(*hi, z) > 0 || (compare_decimal(*hi, z) == 0 && !hi->exclusive);
  if (has_non_negative) {
    const DecimalBound from = lo && compare_decimal(*lo, z) >= 0 ? *lo : z;
    std::optional<DecimalBound> to = hi;
    for (const std::string& a : non_negative(from, to)) alts.push_back(a);
  }
  // x < 0 is "-" and a magnitude y > 0 with -hi <= y <= -lo: the bounds swap and lose their sign.
  const bool has_negative = !lo || compare_decimal(*lo, z) < 0;
  if (has_negative) {
    auto flip = [](const DecimalBound& b) {
      DecimalBound m = b;
      m.negative = false;
      return m;
    };
    // y > 0 strictly (zero is written without the sign above, and -0 would repeat it).
    DecimalBound from = zero(true);
    if (hi && compare_decimal(*hi, z) < 0) from = flip(*hi);
    std::optional<DecimalBound> to;
    if (lo) to = flip(*lo);
    for (const std::string& a : non_negative(from, to)) alts.push_back("\"-\" " + a);
  }
  if (alts.empty()) throw Error("the number bounds leave no value");
  return alternatives(alts);
}

}  // namespace loom
