// JSON numbers between decimal bounds as a GBNF expression, exact on the decimal text: the
// integer part digit by digit (integer_range_gbnf), the fraction compared digit by digit with
// the bound's own fraction (0.25 <= x means "2" then a fraction of at least "5", or more than "2"
// at the first digit, ...). Bounds are read as written in the schema (0.1 is one tenth, not its
// binary double). Bounded numbers are written without an exponent; a fraction has at most 18
// digits per comparison step, as json-number's.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace loom {

struct DecimalBound {
  bool negative = false;
  std::string integer;   // digits without leading zeros ("" for 0)
  std::string fraction;  // digits without trailing zeros ("" for none)
  bool exclusive = false;
};

// The number text `text` as written in JSON ("-12.50", "1e-05", "3E2") as an exact decimal.
// Throws loom::Error when it is not a JSON number, or has more than 18 integer or fraction
// digits (what a bounded grammar keeps finite).
DecimalBound decimal_bound(std::string_view text, bool exclusive);

// < 0, 0 or > 0 as a < b, a == b, a > b (values; exclusive is not looked at).
int compare_decimal(const DecimalBound& a, const DecimalBound& b);
// Whether a is the tighter of two lower (or upper) bounds.
bool tighter_bound(const DecimalBound& a, const DecimalBound& b, bool lower);

// lo <= x <= hi (or < with exclusive) for every x the expression matches, and every such x with
// at most 18 integer and 18 fraction digits is matched. At least one bound is set. Throws
// loom::Error when the bounds leave no value.
std::string number_range_gbnf(const std::optional<DecimalBound>& lo, const std::optional<DecimalBound>& hi);

}  // namespace loom
