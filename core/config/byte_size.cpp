#include "core/config/byte_size.hpp"

#include <array>
#include <cctype>

#include "core/common/error.hpp"

namespace loom {
namespace {

struct Unit {
  std::string_view name;
  int64_t multiplier;
};

constexpr int64_t kKi = 1024;
constexpr int64_t kK = 1000;
constexpr std::array<Unit, 9> kUnits = {{
    {"b", 1},
    {"kb", kK},
    {"mb", kK* kK},
    {"gb", kK* kK* kK},
    {"tb", kK* kK* kK* kK},
    {"kib", kKi},
    {"mib", kKi* kKi},
    {"gib", kKi* kKi* kKi},
    {"tib", kKi* kKi* kKi* kKi},
}};

[[noreturn]] void fail(std::string_view text, std::string_view why) {
  throw Error("invalid byte size \"" + std::string(text) + "\": " + std::string(why) +
              " (examples: 4096, \"64KiB\", \"2GiB\", \"1.5GB\")");
}

bool is_space(char c) { return c == ' ' || c == '\t'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }

// Multiplies with an overflow check; both operands are non-negative.
bool mul_ok(int64_t a, int64_t b, int64_t& out) { return !__builtin_mul_overflow(a, b, &out); }
bool add_ok(int64_t a, int64_t b, int64_t& out) { return !__builtin_add_overflow(a, b, &out); }

}  // namespace

int64_t parse_byte_size(std::string_view text) {
  size_t i = 0;
  size_t end = text.size();
  while (i < end && is_space(text[i])) ++i;
  while (end > i && is_space(text[end - 1])) --end;
  if (i == end) fail(text, "empty");
  if (text[i] == '-') fail(text, "must not be negative");
  if (text[i] == '+') ++i;

  // Integer part, exact.
  int64_t whole = 0;
  const size_t whole_begin = i;
  for (; i < end && is_digit(text[i]); ++i) {
    if (!mul_ok(whole, 10, whole) || !add_ok(whole, text[i] - '0', whole)) {
      fail(text, "too large");
    }
  }
  const bool has_whole = i > whole_begin;

  // Fraction digits, kept as a decimal numerator over 10^k so "1.5GB" stays exact. Trailing
  // zeros add nothing and would only make that arithmetic overflow sooner.
  int64_t frac = 0;
  int64_t frac_den = 1;
  bool has_frac = false;
  if (i < end && text[i] == '.') {
    const size_t frac_begin = ++i;
    while (i < end && is_digit(text[i])) ++i;
    if (i == frac_begin) fail(text, "expected digits after '.'");
    has_frac = true;
    size_t frac_end = i;
    while (frac_end > frac_begin && text[frac_end - 1] == '0') --frac_end;
    for (size_t k = frac_begin; k < frac_end; ++k) {
      if (!mul_ok(frac, 10, frac) || !add_ok(frac, text[k] - '0', frac) ||
          !mul_ok(frac_den, 10, frac_den)) {
        fail(text, "too many fraction digits");
      }
    }
  }
  if (!has_whole && !has_frac) fail(text, "expected a number");

  while (i < end && is_space(text[i])) ++i;
  const std::string_view unit_text = text.substr(i, end - i);
  std::string unit;
  for (; i < end; ++i) {
    unit.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(text[i]))));
  }
  int64_t multiplier = 1;
  if (!unit.empty()) {
    bool found = false;
    for (const Unit& u : kUnits) {
      if (u.name == unit) {
        multiplier = u.multiplier;
        found = true;
      }
    }
    if (!found) {
      fail(text, "unknown unit \"" + std::string(unit_text) +
                     "\" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)");
    }
  }

  int64_t bytes = 0;
  if (!mul_ok(whole, multiplier, bytes)) fail(text, "too large");
  if (has_frac) {
    // frac / frac_den * multiplier must be a whole number of bytes.
    int64_t scaled = 0;
    if (!mul_ok(frac, multiplier, scaled)) fail(text, "too many fraction digits");
    if (scaled % frac_den != 0) fail(text, "not a whole number of bytes");
    if (!add_ok(bytes, scaled / frac_den, bytes)) fail(text, "too large");
  }
  return bytes;
}

std::string format_byte_size(int64_t bytes) {
  static constexpr std::array<std::string_view, 4> kNames = {"TiB", "GiB", "MiB", "KiB"};
  if (bytes > 0) {
    int64_t multiplier = kKi * kKi * kKi * kKi;
    for (std::string_view name : kNames) {
      if (bytes % multiplier == 0) return std::to_string(bytes / multiplier) + std::string(name);
      multiplier /= kKi;
    }
  }
  return std::to_string(bytes);
}

}  // namespace loom
