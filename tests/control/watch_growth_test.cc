// What `vramshim watch` says grew: sites followed across `sites N` answers that list only the N
// holding the most.
#include "analyzer/live/watch_growth.h"

#include <gtest/gtest.h>

namespace vramshim::live {
namespace {

// (An answer is built with json::array: a braced list of one json would copy that one.)
nlohmann::json site(int stack, std::uint64_t bytes, const char* label,
                    const char* kind = "device") {
  return {
      {"stack", stack}, {"kind", kind}, {"live_bytes", bytes}, {"live_count", 1}, {"label", label}};
}

TEST(WatchGrowthTest, SumsByLabelAndKindAndRanksByBytesGained) {
  WatchGrowth growth(10);
  growth.update(nlohmann::json::array({site(1, 100, "leak"), site(2, 50, "leak"),
                                       site(3, 80, "cache"), site(4, 10, "leak", "host")}));
  growth.update(nlohmann::json::array({site(1, 400, "leak"), site(2, 60, "leak"),
                                       site(3, 90, "cache"), site(4, 15, "leak", "host")}));
  const std::vector<GrowingLabel> rows = growth.fastest(5);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].label, "leak");
  EXPECT_EQ(rows[0].kind, "device");
  EXPECT_EQ(rows[0].gained_bytes, 310);
  EXPECT_EQ(rows[0].live_bytes, 460u);
  EXPECT_EQ(rows[1].label, "cache");
  EXPECT_EQ(rows[1].gained_bytes, 10);
  EXPECT_EQ(rows[2].kind, "host");
  EXPECT_EQ(growth.fastest(1).size(), 1u);
}

TEST(WatchGrowthTest, ShrinkingAndSteadySitesAreNotGrowing) {
  WatchGrowth growth(10);
  growth.update(nlohmann::json::array({site(1, 100, "churn"), site(2, 70, "flat")}));
  growth.update(nlohmann::json::array({site(2, 70, "flat")}));  // not full: churn holds nothing now
  EXPECT_TRUE(growth.fastest(5).empty());
}

TEST(WatchGrowthTest, ANewSiteStartsFromNothingWhenTheFirstAnswerListedEverySite) {
  WatchGrowth growth(3);
  growth.update(nlohmann::json::array({site(1, 100, "a")}));
  growth.update(nlohmann::json::array({site(1, 100, "a"), site(7, 40, "new")}));
  const std::vector<GrowingLabel> rows = growth.fastest(5);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].label, "new");
  EXPECT_EQ(rows[0].gained_bytes, 40);
}

TEST(WatchGrowthTest, ANewSiteAfterAFullAnswerStartsFromItsLeast) {
  // The first answer was full (2 of 2): a site not in it held at most 30 then.
  WatchGrowth growth(2);
  growth.update(nlohmann::json::array({site(1, 100, "a"), site(2, 30, "b")}));
  growth.update(nlohmann::json::array({site(1, 100, "a"), site(9, 500, "new")}));
  const std::vector<GrowingLabel> rows = growth.fastest(5);
  ASSERT_EQ(rows.size(), 1u);  // b left the full answer: unknown, not counted as shrinking
  EXPECT_EQ(rows[0].label, "new");
  EXPECT_EQ(rows[0].gained_bytes, 470);
}

TEST(WatchGrowthTest, MalformedAnswersAreIgnored) {
  WatchGrowth growth(10);
  growth.update(nlohmann::json::object());
  growth.update({42, "x", {{"stack", "no"}, {"live_bytes", -5}}});
  EXPECT_TRUE(growth.fastest(5).empty());
}

}  // namespace
}  // namespace vramshim::live
