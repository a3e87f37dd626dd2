#include "shim/python/python_version.h"

#include <gtest/gtest.h>

#include "shim/python/python_mode.h"

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

TEST(PythonModeTest, ParsesAutoAndOff) {
  PythonMode mode = PythonMode::kOff;
  EXPECT_TRUE(parse_python_mode("auto", &mode));
  EXPECT_EQ(mode, PythonMode::kAuto);
  EXPECT_TRUE(parse_python_mode("off", &mode));
  EXPECT_EQ(mode, PythonMode::kOff);
  EXPECT_TRUE(parse_python_mode("1", &mode));
  EXPECT_EQ(mode, PythonMode::kAuto);
  EXPECT_TRUE(parse_python_mode("0", &mode));
  EXPECT_EQ(mode, PythonMode::kOff);
}

TEST(PythonModeTest, RejectsOtherValuesAndKeepsTheMode) {
  PythonMode mode = PythonMode::kAuto;
  EXPECT_FALSE(parse_python_mode("yes please", &mode));
  EXPECT_FALSE(parse_python_mode("", &mode));
  EXPECT_FALSE(parse_python_mode(nullptr, &mode));
  EXPECT_EQ(mode, PythonMode::kAuto);
}

}  // namespace
}  // namespace vramshim::python
