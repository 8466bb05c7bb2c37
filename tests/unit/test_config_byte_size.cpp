#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "core/common/error.hpp"
#include "core/config/byte_size.hpp"

namespace loom {
namespace {

std::string error_of(const std::string& text) {
  try {
    parse_byte_size(text);
  } catch (const Error& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(ByteSize, ParsesIntegersAndUnits) {
  EXPECT_EQ(parse_byte_size("0"), 0);
  EXPECT_EQ(parse_byte_size("512"), 512);
  EXPECT_EQ(parse_byte_size("+7"), 7);
  EXPECT_EQ(parse_byte_size("12B"), 12);
  EXPECT_EQ(parse_byte_size("1KB"), 1000);
  EXPECT_EQ(parse_byte_size("100MB"), 100'000'000);
  EXPECT_EQ(parse_byte_size("3GB"), 3'000'000'000);
  EXPECT_EQ(parse_byte_size("2TB"), 2'000'000'000'000);
  EXPECT_EQ(parse_byte_size("64KiB"), 65536);
  EXPECT_EQ(parse_byte_size("64MiB"), 67108864);
  EXPECT_EQ(parse_byte_size("2GiB"), 2147483648);
  EXPECT_EQ(parse_byte_size("1TiB"), 1099511627776);
  EXPECT_EQ(parse_byte_size("9223372036854775807"), std::numeric_limits<int64_t>::max());
}

TEST(ByteSize, ParsesFractionsSpacesAndAnyCase) {
  EXPECT_EQ(parse_byte_size("1.5GB"), 1'500'000'000);
  EXPECT_EQ(parse_byte_size("1.5KiB"), 1536);
  EXPECT_EQ(parse_byte_size(".5KiB"), 512);
  EXPECT_EQ(parse_byte_size("0.25MiB"), 262144);
  EXPECT_EQ(parse_byte_size("1.0"), 1);
  EXPECT_EQ(parse_byte_size("2.500000000000000000000GB"), 2'500'000'000);
  EXPECT_EQ(parse_byte_size(" 64 mib "), 67108864);
  EXPECT_EQ(parse_byte_size("8gb"), 8'000'000'000);
  EXPECT_EQ(parse_byte_size("1\tKIB"), 1024);
}

TEST(ByteSize, RejectsMalformedText) {
  const std::string examples = " (examples: 4096, \"64KiB\", \"2GiB\", \"1.5GB\")";
  EXPECT_EQ(error_of(""), "invalid byte size \"\": empty" + examples);
  EXPECT_EQ(error_of("   "), "invalid byte size \"   \": empty" + examples);
  EXPECT_EQ(error_of("-1"), "invalid byte size \"-1\": must not be negative" + examples);
  EXPECT_EQ(error_of("MiB"), "invalid byte size \"MiB\": expected a number" + examples);
  EXPECT_EQ(error_of("1."), "invalid byte size \"1.\": expected digits after '.'" + examples);
  EXPECT_EQ(error_of("1.5"), "invalid byte size \"1.5\": not a whole number of bytes" + examples);
  EXPECT_EQ(error_of("0.1KiB"),
            "invalid byte size \"0.1KiB\": not a whole number of bytes" + examples);
  EXPECT_EQ(error_of("12XB"),
            "invalid byte size \"12XB\": unknown unit \"XB\" (valid: B, KB, MB, GB, TB, KiB, MiB, "
            "GiB, TiB)" +
                examples);
  EXPECT_EQ(error_of("64 KiB extra"),
            "invalid byte size \"64 KiB extra\": unknown unit \"KiB extra\" (valid: B, KB, MB, GB, "
            "TB, KiB, MiB, GiB, TiB)" +
                examples);
  EXPECT_EQ(
      error_of("2G"),
      "invalid byte size \"2G\": unknown unit \"G\" (valid: B, KB, MB, GB, TB, KiB, MiB, GiB, "
      "TiB)" +
          examples);
}

TEST(ByteSize, RejectsValuesAboveInt64) {
  const std::string examples = " (examples: 4096, \"64KiB\", \"2GiB\", \"1.5GB\")";
  EXPECT_EQ(error_of("9223372036854775808"),
            "invalid byte size \"9223372036854775808\": too large" + examples);
  EXPECT_EQ(error_of("8589934592GiB"), "invalid byte size \"8589934592GiB\": too large" + examples);
  // The whole part fits; adding the fraction goes past INT64_MAX = 9223372.036854775807 TB.
  EXPECT_EQ(error_of("9223372.5TB"), "invalid byte size \"9223372.5TB\": too large" + examples);
  EXPECT_EQ(parse_byte_size("9223372.03TB"), 9223372030000000000);
  EXPECT_EQ(parse_byte_size("8388607.5TiB"), 9223371487098961920);
}

TEST(ByteSize, FormatsWithTheLargestExactBinaryUnit) {
  EXPECT_EQ(format_byte_size(0), "0");
  EXPECT_EQ(format_byte_size(1000), "1000");
  EXPECT_EQ(format_byte_size(1536), "1536");
  EXPECT_EQ(format_byte_size(1024), "1KiB");
  EXPECT_EQ(format_byte_size(1536 * 1024), "1536KiB");
  EXPECT_EQ(format_byte_size(64 * 1024 * 1024), "64MiB");
  EXPECT_EQ(format_byte_size(int64_t{3} << 40), "3TiB");
  for (int64_t n : {int64_t{0}, int64_t{1}, int64_t{1024}, int64_t{1536 * 1024}, int64_t{3} << 40,
                    std::numeric_limits<int64_t>::max()}) {
    EXPECT_EQ(parse_byte_size(format_byte_size(n)), n) << n;
  }
}

}  // namespace
}  // namespace loom
