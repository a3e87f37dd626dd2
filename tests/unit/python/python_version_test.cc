#include "shim/python/python_version.h"

#include <gtest/gtest.h>

namespace vramshim::python {
namespace {

TEST(PythonVersionTest, ReadsPyVersionHex) {
  const PythonVersion version = version_from_hex(0x030B07F0);
  EXPECT_EQ(version.major, 3);
  EXPECT_EQ(version.minor, 11);
  EXPECT_EQ(version.micro, 7);
}

TEST(PythonVersionTest, ParsesPyGetVersionText) {
  const PythonVersion version = parse_version_text("3.10.13 (main, May  9 2026) [GCC 12.2.0]");
  EXPECT_EQ(version.major, 3);
  EXPECT_EQ(version.minor, 10);
  EXPECT_EQ(version.micro, 13);
  EXPECT_EQ(parse_version_text("3.12+ (heads/main)").minor, 12);
}

TEST(PythonVersionTest, AnythingElseIsUnknown) {
  EXPECT_FALSE(parse_version_text(nullptr).known());
  EXPECT_FALSE(parse_version_text("").known());
  EXPECT_FALSE(parse_version_text("python 3.11").known());
  EXPECT_FALSE(parse_version_text("3").known());
  EXPECT_FALSE(parse_version_text("3.x").known());
}

}  // namespace
}  // namespace vramshim::python
