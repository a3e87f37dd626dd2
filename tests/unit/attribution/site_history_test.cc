#include "shim/attribution/site_history.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

namespace vramshim::attribution {
namespace {

constexpr size_t kSites = 10000;
constexpr uint64_t kTicks = 100000;
constexpr uint32_t kLeak = 7;
// Too small for the workload's points at the resolution kMaxSlots allows: the history also halves
// for room.
constexpr uint64_t kBudget = uint64_t{4} << 20;

struct Change {
  uint32_t site;
  uint64_t live_bytes;
};

// A run of kTicks ticks over kSites sites: during the first 2 * kSites ticks one site in turn
// changes per tick (so every site exists), eight of 64 hot sites churn at every tick, a random
// site changes every 64th tick, and one site grows by 1 MiB every ten ticks. Calls
// visit(tick, changes, values) per tick.
template <typename Visit>
void run_workload(Visit&& visit) {
  std::mt19937_64 random(17);
  std::vector<uint64_t> now(kSites, 0);
  std::vector<Change> changes;
  for (uint64_t tick = 0; tick < kTicks; ++tick) {
    changes.clear();
    auto change = [&](uint32_t site, uint64_t value) {
      for (const auto& c : changes) {
        if (c.site == site) return;
      }
      now[site] = value;
      changes.push_back({site, value});
    };
    if (tick < 2 * kSites) change(static_cast<uint32_t>(tick % kSites), (tick % 13 + 1) * 512);
    for (int i = 0; i < 8; ++i) {
      change(static_cast<uint32_t>(1000 + random() % 64), (random() % 64) * 4096);
    }
    if (tick % 64 == 0) change(static_cast<uint32_t>(random() % kSites), (random() % 64) * 4096);
    if (tick % 10 == 0) change(kLeak, (tick / 10 + 1) << 20);
    visit(tick, changes, now);
  }
}

double time_of(uint64_t tick) { return 1.0e9 + static_cast<double>(tick) * 0.1; }

TEST(SiteHistoryTest, AHundredThousandTicksOverTenThousandSitesStayWithinTheBudget) {
  // The reference: every site's final value and largest value, and the tick of the largest total.
  std::vector<uint64_t> largest(kSites, 0);
  std::vector<uint64_t> final_value;
  uint64_t total = 0, peak_total = 0, peak_tick = 0;
  std::vector<uint64_t> previous(kSites, 0);
  run_workload(
      [&](uint64_t tick, const std::vector<Change>& changes, const std::vector<uint64_t>& now) {
        for (const auto& c : changes) {
          total = total - previous[c.site] + c.live_bytes;
          previous[c.site] = c.live_bytes;
          largest[c.site] = std::max(largest[c.site], c.live_bytes);
        }
        if (total > peak_total) {
          peak_total = total;
          peak_tick = tick;
        }
        if (tick + 1 == kTicks) final_value = now;
      });
  std::vector<uint64_t> at_peak;
  SiteHistory history(kBudget);
  size_t most_memory = 0;
  run_workload([&](uint64_t tick, const std::vector<Change>&, const std::vector<uint64_t>& now) {
    history.tick(time_of(tick), now.data(), now.size());
    if (tick % 4096 == 0) most_memory = std::max(most_memory, history.memory_bytes());
    if (tick == peak_tick) at_peak = now;
  });
  most_memory = std::max(most_memory, history.memory_bytes());
  EXPECT_LE(most_memory, kBudget);

  const History read = history.read();
  EXPECT_EQ(read.ticks, kTicks);
  EXPECT_EQ(read.untracked_sites, 0u);
  EXPECT_GT(read.ticks_per_slot, 1u);
  EXPECT_LE(read.slot_times.size(), SiteHistory::kMaxSlots);
  EXPECT_DOUBLE_EQ(read.slot_times.back(), time_of(kTicks - 1));
  EXPECT_DOUBLE_EQ(read.peak_time, time_of(peak_tick));
  EXPECT_EQ(read.peak_bytes, peak_total);
  size_t with_bytes = 0;
  for (size_t i = 0; i < kSites; ++i) with_bytes += largest[i] > 0;
  ASSERT_EQ(read.sites.size(), with_bytes);
  for (const SiteSeries& series : read.sites) {
    ASSERT_FALSE(series.points.empty());
    EXPECT_EQ(series.points.back().last, final_value[series.site]) << "site " << series.site;
    EXPECT_EQ(series.at_peak, at_peak[series.site]) << "site " << series.site;
    uint64_t most = 0;
    for (size_t p = 0; p < series.points.size(); ++p) {
      if (p > 0) {
        EXPECT_LT(series.points[p - 1].slot, series.points[p].slot);
      }
      EXPECT_LT(series.points[p].slot, read.slot_times.size());
      EXPECT_GE(series.points[p].max, series.points[p].last);
      most = std::max(most, series.points[p].max);
    }
    EXPECT_EQ(most, largest[series.site]) << "site " << series.site;
  }
  // The leak's growth is still legible: its last value per slot rises slot after slot.
  const auto leak = std::find_if(read.sites.begin(), read.sites.end(),
                                 [](const SiteSeries& s) { return s.site == kLeak; });
  ASSERT_NE(leak, read.sites.end());
  EXPECT_GT(leak->points.size(), SiteHistory::kMaxSlots / 16);
  for (size_t p = 1; p < leak->points.size(); ++p) {
    EXPECT_GT(leak->points[p].last, leak->points[p - 1].last);
  }
}

TEST(SiteHistoryTest, FullTicksRecordOnlyTheSitesThatChanged) {
  SiteHistory history(1 << 20);
  std::vector<uint64_t> live = {0, 100, 0};
  history.tick(1.0, live.data(), live.size());
  live = {0, 100, 50};
  history.tick(1.1, live.data(), live.size());
  live.push_back(7);  // a site new since the last tick
  history.tick(1.2, live.data(), live.size());
  const History read = history.read();
  ASSERT_EQ(read.sites.size(), 3u);
  EXPECT_EQ(read.sites[0].site, 1u);
  ASSERT_EQ(read.sites[0].points.size(), 1u);
  EXPECT_EQ(read.sites[0].points[0].slot, 0u);
  EXPECT_EQ(read.sites[1].site, 2u);
  EXPECT_EQ(read.sites[1].points[0].slot, 1u);
  EXPECT_EQ(read.sites[2].site, 3u);
  EXPECT_EQ(read.sites[2].points[0].slot, 2u);
  EXPECT_EQ(read.peak_bytes, 157u);
}

TEST(SiteHistoryTest, ATickWithFiguresOlderThanTheLastTickLeavesTheNewerSitesAlone) {
  SiteHistory history(1 << 20);
  std::vector<uint64_t> live = {10, 20, 30, 40};
  history.tick(1.0, live.data(), live.size());
  // A caller that read its figures before sites 2 and 3 appeared: what follows its two values in
  // memory is not theirs.
  live = {11, 21, 999, 999};
  history.tick(1.1, live.data(), 2);
  const History read = history.read();
  ASSERT_EQ(read.sites.size(), 4u);
  for (const SiteSeries& series : read.sites) {
    const uint64_t expected_points = series.site < 2 ? 2 : 1;
    ASSERT_EQ(series.points.size(), expected_points) << "site " << series.site;
    EXPECT_NE(series.points.back().last, 999u) << "site " << series.site;
  }
  EXPECT_EQ(read.peak_bytes, 11u + 21 + 30 + 40);
}

TEST(SiteHistoryTest, HalvingKeepsEachSlotsLastAndLargestValue) {
  SiteHistory history(1 << 20);
  // Values 1..kMaxSlots+1 at consecutive ticks, then one tick that drops to 0.
  std::vector<uint64_t> live(1);
  for (uint64_t tick = 0; tick <= SiteHistory::kMaxSlots; ++tick) {
    live[0] = tick % 2 == 0 ? 10 * tick + 5 : tick;  // the even tick of each pair is larger
    history.tick(static_cast<double>(tick), live.data(), 1);
  }
  const History read = history.read();
  EXPECT_EQ(read.ticks_per_slot, 2u);
  ASSERT_EQ(read.sites.size(), 1u);
  const auto& points = read.sites[0].points;
  ASSERT_EQ(points.size(), SiteHistory::kMaxSlots / 2 + 1);
  EXPECT_EQ(points[0].last, 1u);  // ticks 0 and 1: 5 then 1
  EXPECT_EQ(points[0].max, 5u);
  EXPECT_EQ(points[3].last, 7u);  // ticks 6 and 7: 65 then 7
  EXPECT_EQ(points[3].max, 65u);
  EXPECT_DOUBLE_EQ(read.slot_times[3], 7.0);
  EXPECT_EQ(read.peak_bytes, 10 * SiteHistory::kMaxSlots + 5);
}

// Every site changes at every tick (a job's many sites growing at once), so the history halves for
// room in the middle of ticks: a site's record of the slot before then falls into the current slot,
// and must take the tick's value rather than a second point (slots rise strictly in a series, or
// the report is refused by its reader).
TEST(SiteHistoryTest, HalvingInTheMiddleOfATickKeepsOnePointPerSlot) {
  // Whether the site whose record fills the budget finds its record of the slot before in the
  // current one depends on the parity of the slot: each of these ended with one such site.
  const struct {
    size_t sites;
    uint64_t budget;
  } cases[] = {{100, 2 << 20}, {200, 2 << 20}, {200, 4 << 20}, {200, 8 << 20}};
  for (const auto& c : cases) {
    SiteHistory history(c.budget);
    std::vector<uint64_t> live(c.sites);
    for (uint64_t tick = 0; tick < 6000; ++tick) {
      for (size_t site = 0; site < c.sites; ++site) live[site] = 4096 * (1 + (tick + site) % 3);
      history.tick(static_cast<double>(tick), live.data(), live.size());
    }
    const History read = history.read();
    ASSERT_GT(read.ticks_per_slot, 1u) << "the workload must make the history halve";
    ASSERT_EQ(read.sites.size(), c.sites);
    for (const SiteSeries& series : read.sites) {
      for (size_t i = 1; i < series.points.size(); ++i) {
        ASSERT_LT(series.points[i - 1].slot, series.points[i].slot)
            << c.sites << " sites, budget " << c.budget << ": site " << series.site << ", point "
            << i;
      }
      EXPECT_EQ(series.points.back().last, live[series.site]) << "site " << series.site;
    }
  }
}

// Sites that appear after the records grew to the room the budget left them take part of that
// room: the records give it back (halving as often as needed), so the history never holds more
// than its budget (it held up to 30 % more).
TEST(SiteHistoryTest, SitesThatAppearLateKeepTheHistoryWithinItsBudget) {
  constexpr uint64_t kSmallBudget = 256 << 10;
  SiteHistory history(kSmallBudget);
  std::vector<uint64_t> live(4000, 0);
  size_t sites = 4;
  uint64_t most_memory = 0;
  for (uint64_t tick = 0; tick < 6000; ++tick) {
    if (tick >= 1500 && tick % 100 == 0) sites = std::min(live.size(), sites + 400);
    for (size_t site = 0; site < sites; ++site) live[site] = 4096 * ((tick + site) % 3 + 1);
    history.tick(static_cast<double>(tick), live.data(), sites);
    most_memory = std::max(most_memory, history.memory_bytes());
  }
  EXPECT_LE(most_memory, kSmallBudget);
  const History read = history.read();
  for (const SiteSeries& series : read.sites) {
    ASSERT_FALSE(series.points.empty());
    EXPECT_EQ(series.points.back().last, live[series.site]) << "site " << series.site;
  }
}

TEST(SiteHistoryTest, ASmallBudgetLeavesLaterSitesUntracked) {
  // Half the budget holds the slot times and the states of a few sites.
  const uint64_t budget = 2 * (SiteHistory::kMaxSlots * sizeof(double) + 10 * 24);
  SiteHistory history(budget);
  std::vector<uint64_t> live(25, 1);
  history.tick(1.0, live.data(), live.size());
  EXPECT_LE(history.memory_bytes(), budget);
  const History read = history.read();
  EXPECT_EQ(read.sites.size(), 10u);
  EXPECT_EQ(read.untracked_sites, 15u);
}

}  // namespace
}  // namespace vramshim::attribution
