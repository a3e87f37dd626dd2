// Figures as users read them.
#include "analyzer/render/units.h"

#include <gtest/gtest.h>

namespace vramshim::analyzer {
namespace {

TEST(Units, BytesInBinaryUnits) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(int64_t{3} << 20), "3.0 MiB");
  EXPECT_EQ(format_bytes((int64_t{30} << 30) + (int64_t{512} << 20)), "30.5 GiB");
  EXPECT_EQ(format_bytes(int64_t{2} << 40), "2.0 TiB");
  EXPECT_EQ(format_bytes(-(int64_t{1} << 20)), "-1.0 MiB");
}

TEST(Units, SignedGrowth) {
  EXPECT_EQ(format_signed_bytes(int64_t{15} << 20), "+15.0 MiB");
  EXPECT_EQ(format_signed_bytes(-512), "-512 B");
  EXPECT_EQ(format_signed_bytes(0), "0 B");
}

TEST(Units, CountsWithThousandsSeparators) {
  EXPECT_EQ(format_count(0), "0");
  EXPECT_EQ(format_count(999), "999");
  EXPECT_EQ(format_count(1000), "1,000");
  EXPECT_EQ(format_count(1234567), "1,234,567");
  EXPECT_EQ(format_count(-1000), "-1,000");
}

TEST(Units, CountsOfSomething) {
  EXPECT_EQ(format_count_of(1, "block", "blocks"), "1 block");
  EXPECT_EQ(format_count_of(0, "block", "blocks"), "0 blocks");
  EXPECT_EQ(format_count_of(2048, "block", "blocks"), "2,048 blocks");
}

TEST(Units, SecondsWithOneDecimal) {
  EXPECT_EQ(format_seconds(0), "0.0 s");
  EXPECT_EQ(format_seconds(42.75), "42.8 s");
}

}  // namespace
}  // namespace vramshim::analyzer
