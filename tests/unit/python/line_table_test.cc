#include "shim/python/line_table.h"

#include <gtest/gtest.h>

#include <vector>

namespace vramshim::python {
namespace {

// First byte of a PEP 657 location entry: start bit, 4-bit code, length in code units minus one.
uint8_t entry(int code, int units) {
  return static_cast<uint8_t>(0x80 | (code << 3) | (units - 1));
}

const std::vector<uint8_t> kLocations = {
    entry(13, 2), 0x02,                    // units 0-1: no columns, line +1
    entry(11, 3), 5,           9,          // units 2-4: one-line form, line +1, columns 5..9
    entry(15, 1),                          // unit 5: no location
    entry(14, 3), 0x05,        0,   1, 2,  // units 6-8: long form, line -2, end line, columns
    entry(0, 1),  0x11,                    // unit 9: short form, same line
    entry(13, 1), 0x40 | 0x02, 0x01        // unit 10: line +(2 + 64) / 2 = +33, a two-byte varint
};

TEST(LocationTableTest, FindsTheLineOfEachInstruction) {
  const int first = 100;
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 0), 101);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 1), 101);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 2), 102);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 4), 102);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 5), -1);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 6), 100);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 9), 100);
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), first, 10), 133);
}

TEST(LocationTableTest, OffsetsPastTheTableHaveNoLine) {
  EXPECT_EQ(line_from_locations(kLocations.data(), kLocations.size(), 100, 11), -1);
  EXPECT_EQ(line_from_locations(nullptr, 0, 100, 0), -1);
}

TEST(LocationTableTest, TruncatedOrMalformedTablesNeverReadPastTheirEnd) {
  // Every prefix of the table: lines of entries that are complete, -1 after them, no overread
  // (AddressSanitizer or a guard page would catch one; here the vector's size bounds the reads).
  for (size_t size = 0; size <= kLocations.size(); ++size) {
    std::vector<uint8_t> prefix(kLocations.begin(), kLocations.begin() + size);
    for (int unit = 0; unit < 12; ++unit) {
      const int line = line_from_locations(prefix.data(), prefix.size(), 100, unit);
      EXPECT_TRUE(line == -1 || (line >= 100 && line <= 133)) << size << " " << unit;
    }
  }
  const std::vector<uint8_t> continuation_first = {0x02, entry(13, 1), 0x02};
  EXPECT_EQ(line_from_locations(continuation_first.data(), continuation_first.size(), 1, 0), -1);
  const std::vector<uint8_t> endless_varint = {entry(13, 1), 0x7f, 0x7f, 0x7f, 0x7f, 0x7f, 0x7f};
  EXPECT_EQ(line_from_locations(endless_varint.data(), endless_varint.size(), 1, 0), -1);
}

TEST(LineDeltaTableTest, FindsTheLineOfEachByteOffset) {
  // (bytes, line delta) pairs of 3.10; -128 = no line.
  const std::vector<uint8_t> table = {
      4, 1, 6, 2, 2, static_cast<uint8_t>(-128), 4, static_cast<uint8_t>(-1)};
  const int first = 10;
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 0), 11);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 3), 11);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 4), 13);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 10), -1);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 12), 12);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, 16), -1);
  EXPECT_EQ(line_from_line_deltas(table.data(), table.size(), first, -2), first);
  // A truncated table: the half pair is ignored.
  EXPECT_EQ(line_from_line_deltas(table.data(), 3, first, 3), 11);
  EXPECT_EQ(line_from_line_deltas(table.data(), 3, first, 4), -1);
}

}  // namespace
}  // namespace vramshim::python
