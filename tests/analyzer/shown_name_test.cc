#include "analyzer/model/shown_name.h"

#include <gtest/gtest.h>

#include <string>

namespace vramshim::analyzer {
namespace {

// A cut name was 4,108 bytes, over the bound: each export and import of a report cut it again,
// with a new hash, so one function's name changed at every round trip.
TEST(ShownName, ACutNameFitsTheBoundAndIsKeptByTheNextCut) {
  const std::string long_name(5000, 'x');
  const std::string cut = shown_name(long_name);
  EXPECT_LE(cut.size(), kMaxShownNameBytes);
  EXPECT_EQ(shown_name(cut), cut);
  EXPECT_NE(cut, shown_name(std::string(4999, 'x') + "y")) << "names alike for 4 KiB stay apart";
  EXPECT_EQ(shown_name("forward"), "forward");
}

TEST(ShownName, CutsAtACharacterBoundary) {
  std::string name;
  while (name.size() < 5000) name += "\u00e9";  // two bytes each
  const std::string cut = shown_name(name);
  const size_t ellipsis = cut.find("\u2026");
  ASSERT_NE(ellipsis, std::string::npos);
  EXPECT_EQ(ellipsis % 2, 0u);
}

}  // namespace
}  // namespace vramshim::analyzer
