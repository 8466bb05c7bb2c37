// Decimal integers in a range as a GBNF expression: digit by digit, the way one writes a
// range regex ([lo, hi] = a few alternatives of fixed-length digit classes per length).
// Without a bound the side is open up to 18 digits (json-integer's limit).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace loom {

// lo <= hi when both are set; |bounds| <= 10^18.
std::string integer_range_gbnf(std::optional<int64_t> lo, std::optional<int64_t> hi);

}  // namespace loom
