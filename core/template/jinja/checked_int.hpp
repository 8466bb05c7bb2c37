// Integer arithmetic for templates. Template integers are int64 where Python's are unbounded, so
// a result that does not fit is an Error (a 400 for the request that rendered it), never
// undefined behaviour, a wrapped value or a trap (INT64_MIN / -1).
#pragma once

#include <cstdint>
#include <string>

#include "core/common/error.hpp"

namespace loom::jinja {

[[noreturn]] inline void fail_int_overflow(const char* op) {
  throw Error(std::string("integer overflow in '") + op + "' (template integers are 64-bit)");
}

inline int64_t checked_add(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_add_overflow(x, y, &r)) fail_int_overflow("+");
  return r;
}

inline int64_t checked_sub(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_sub_overflow(x, y, &r)) fail_int_overflow("-");
  return r;
}

inline int64_t checked_mul(int64_t x, int64_t y) {
  int64_t r = 0;
  if (__builtin_mul_overflow(x, y, &r)) fail_int_overflow("*");
  return r;
}

inline int64_t checked_neg(int64_t x) { return checked_sub(0, x); }

// x ** n for n >= 0 by squaring: O(log n) steps, so a huge exponent cannot stall a render. A
// square is taken only when a higher bit of n needs it, so it overflows only if the result does.
inline int64_t checked_power(int64_t x, int64_t n) {
  int64_t result = 1;
  while (n > 0) {
    if ((n & 1) != 0 && __builtin_mul_overflow(result, x, &result)) fail_int_overflow("**");
    n >>= 1;
    if (n > 0 && __builtin_mul_overflow(x, x, &x)) fail_int_overflow("**");
  }
  return result;
}

// x % y == 0 without the trap of INT64_MIN % -1 (whose remainder is 0).
inline bool divisible_by(int64_t x, int64_t y) { return y != 0 && (y == -1 || x % y == 0); }

}  // namespace loom::jinja
