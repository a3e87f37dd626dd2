// The tracker names the application function that allocated, with exact figures, and drops the
// frames of the module that holds the hooks and the tracker (this test binary, standing in for
// libvramshim.so); the scenarios live in their own shared library, like application code.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "shim/attribution/tracker.h"
#include "tests/unit/attribution/allocation_scenarios.h"

namespace vramshim::attribution {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

Tracker* current_tracker = nullptr;
AllocationKind current_kind = AllocationKind::kDevice;

void hook_allocate(uint64_t key, uint64_t size) {
  current_tracker->on_alloc(key, size, current_kind, 0, 0);
}
void hook_release(uint64_t key) { current_tracker->on_free(key); }
const ScenarioHooks kHooks{hook_allocate, hook_release};

std::string function_at(uint64_t return_address) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(return_address - 1), &info) == 0 ||
      info.dli_sname == nullptr) {
    return "";
  }
  return info.dli_sname;
}

struct Figures {
  int sites = 0;
  uint64_t live_bytes = 0, live_count = 0, total_bytes = 0, total_count = 0;
  uint64_t peak_bytes = 0, bytes_at_peak = 0;
};

// Sums the sites whose innermost frame lies in `function` (the compiler may give one scenario
// several call sites, hence several stacks).
Figures sites_allocated_in(const Tracker& tracker, const TrackerSnapshot& snapshot,
                           const std::string& function) {
  Figures figures;
  for (const SiteFigures& site : snapshot.sites) {
    if (site.stack < 0) continue;
    const StackTable::Frames frames = tracker.stacks().frames_of(site.stack);
    if (frames.depth == 0) continue;
    if (function_at(tracker.stacks().frame_address(frames.frame_ids[0])) != function) continue;
    ++figures.sites;
    figures.live_bytes += site.live_bytes;
    figures.live_count += site.live_count;
    figures.total_bytes += site.total_bytes;
    figures.total_count += site.total_count;
    figures.peak_bytes = std::max(figures.peak_bytes, site.peak_bytes);
    figures.bytes_at_peak += site.bytes_at_peak;
  }
  return figures;
}

class ScenarioAttribution : public ::testing::TestWithParam<Unwinder> {
 protected:
  TrackerOptions options_for(StackMode mode) const {
    TrackerOptions options;
    options.stacks = mode;
    options.unwinder = GetParam();
    options.own_module = ModuleRange::of_this_module();
    return options;
  }

  static void run_scenarios(Tracker& tracker) {
    current_tracker = &tracker;
    leak_three_blocks(&kHooks, 0x10000);
    churn(&kHooks, 0x20000);
    peak_then_free(&kHooks, 0x30000);
  }
};

TEST_P(ScenarioAttribution, NamesEachScenarioWithExactFigures) {
  Tracker tracker(options_for(StackMode::kAll));
  ASSERT_EQ(tracker.unwinder(), GetParam());
  run_scenarios(tracker);
  const TrackerSnapshot snapshot = tracker.snapshot();

  const Figures leak = sites_allocated_in(tracker, snapshot, "leak_three_blocks");
  ASSERT_GE(leak.sites, 1);
  EXPECT_EQ(leak.live_bytes, 3 * kMiB);
  EXPECT_EQ(leak.live_count, 3u);
  EXPECT_EQ(leak.total_bytes, 3 * kMiB);
  EXPECT_EQ(leak.total_count, 3u);
  EXPECT_EQ(leak.bytes_at_peak, 3 * kMiB);

  const Figures churned = sites_allocated_in(tracker, snapshot, "churn");
  ASSERT_GE(churned.sites, 1);
  EXPECT_EQ(churned.live_bytes, 0u);
  EXPECT_EQ(churned.live_count, 0u);
  EXPECT_EQ(churned.total_bytes, 10000u * 4096u);
  EXPECT_EQ(churned.total_count, 10000u);
  EXPECT_EQ(churned.peak_bytes, 4096u);
  EXPECT_EQ(churned.bytes_at_peak, 0u);

  const Figures peak = sites_allocated_in(tracker, snapshot, "peak_then_free");
  ASSERT_EQ(peak.sites, 1);
  EXPECT_EQ(peak.live_bytes, 0u);
  EXPECT_EQ(peak.total_bytes, 256 * kMiB);
  EXPECT_EQ(peak.total_count, 1u);
  EXPECT_EQ(peak.peak_bytes, 256 * kMiB);
  EXPECT_EQ(peak.bytes_at_peak, 256 * kMiB);

  // Every allocation came from a scenario: nothing else was attributed.
  EXPECT_EQ(snapshot.sites.size(), static_cast<size_t>(leak.sites + churned.sites + peak.sites));
  EXPECT_EQ(snapshot.in_use_bytes, 3 * kMiB);
  EXPECT_EQ(snapshot.peak_in_use_bytes, 259 * kMiB);
}

TEST_P(ScenarioAttribution, StacksHoldNoFrameOfTheHookModuleBeforeTheApplication) {
  Tracker tracker(options_for(StackMode::kAll));
  run_scenarios(tracker);
  const ModuleRange hook_module = ModuleRange::of_this_module();
  const ModuleRange application = ModuleRange::containing(reinterpret_cast<void*>(&churn));
  ASSERT_NE(application.begin, hook_module.begin);
  ASSERT_GT(tracker.stacks().stack_count(), 0u);
  for (size_t s = 0; s < tracker.stacks().stack_count(); ++s) {
    const StackTable::Frames frames = tracker.stacks().frames_of(static_cast<uint32_t>(s));
    ASSERT_GT(frames.depth, 1u);
    const uint64_t innermost = tracker.stacks().frame_address(frames.frame_ids[0]);
    EXPECT_TRUE(application.contains(innermost)) << function_at(innermost);
    for (uint32_t i = 0; i < frames.depth; ++i) {
      const std::string name = function_at(tracker.stacks().frame_address(frames.frame_ids[i]));
      EXPECT_EQ(name.find("on_alloc"), std::string::npos);
      EXPECT_EQ(name.find("capture"), std::string::npos);
    }
  }
}

// The stack of an allocation deeper than the depth ends with the cut frame, after the depth's
// frames; one that fits in the depth does not.
void allocate_at_bottom(void* key) { hook_allocate(reinterpret_cast<uint64_t>(key), 512); }

TEST_P(ScenarioAttribution, AStackTheDepthCutEndsWithTheCutFrame) {
  TrackerOptions options = options_for(StackMode::kAll);
  options.stack_depth = 16;
  Tracker tracker(options);
  current_tracker = &tracker;
  std::thread([] {
    scenario_recurse(40, allocate_at_bottom, reinterpret_cast<void*>(0x100));
    scenario_recurse(2, allocate_at_bottom, reinterpret_cast<void*>(0x200));
  }).join();
  const TrackerSnapshot snapshot = tracker.snapshot();
  ASSERT_EQ(snapshot.sites.size(), 2u);
  const StackTable& stacks = tracker.stacks();
  const auto outermost = [&](const StackTable::Frames& frames) {
    return stacks.frame_address(frames.frame_ids[frames.depth - 1]);
  };
  const StackTable::Frames deep = stacks.frames_of(snapshot.sites[0].stack);
  ASSERT_EQ(deep.depth, 17u);
  EXPECT_EQ(outermost(deep), StackTable::kCutAddress);
  for (uint32_t i = 1; i < 16; ++i) {
    EXPECT_EQ(function_at(stacks.frame_address(deep.frame_ids[i])), "scenario_recurse") << i;
  }
  const StackTable::Frames shallow = stacks.frames_of(snapshot.sites[1].stack);
  ASSERT_LE(shallow.depth, 16u);
  EXPECT_NE(outermost(shallow), StackTable::kCutAddress);
}

TEST_P(ScenarioAttribution, StacksOffKeepsTheFiguresUnderOneSitePerKind) {
  Tracker tracker(options_for(StackMode::kOff));
  current_kind = AllocationKind::kManaged;
  run_scenarios(tracker);
  current_kind = AllocationKind::kDevice;
  const TrackerSnapshot snapshot = tracker.snapshot();
  ASSERT_EQ(snapshot.sites.size(), 1u);
  const SiteFigures& site = snapshot.sites[0];
  EXPECT_EQ(site.stack, -1);
  EXPECT_EQ(site.kind, AllocationKind::kManaged);
  EXPECT_EQ(site.live_bytes, 3 * kMiB);
  EXPECT_EQ(site.live_count, 3u);
  EXPECT_EQ(site.total_bytes, 3 * kMiB + 10000u * 4096u + 256 * kMiB);
  EXPECT_EQ(site.total_count, 3u + 10000u + 1u);
  EXPECT_EQ(site.peak_bytes, 259 * kMiB);
  EXPECT_EQ(site.bytes_at_peak, 259 * kMiB);
  EXPECT_EQ(tracker.stacks().stack_count(), 0u);
}

INSTANTIATE_TEST_SUITE_P(BothUnwinders, ScenarioAttribution,
                         ::testing::Values(Unwinder::kLibunwind, Unwinder::kLibgcc),
                         [](const ::testing::TestParamInfo<Unwinder>& info) {
                           return info.param == Unwinder::kLibunwind ? std::string("libunwind")
                                                                     : std::string("libgcc");
                         });

}  // namespace
}  // namespace vramshim::attribution
