// Per-site and process figures of the tracker: exact live/total/peak/at-peak bookkeeping, kinds,
// retirement, sampling estimates and concurrent use.
#include <gtest/gtest.h>

#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "shim/attribution/tracker.h"

namespace vramshim::attribution {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TrackerOptions stacks_off() {
  TrackerOptions options;
  options.stacks = StackMode::kOff;
  return options;
}

const SiteFigures* site_of_kind(const TrackerSnapshot& snapshot, AllocationKind kind) {
  for (const SiteFigures& site : snapshot.sites) {
    if (site.kind == kind) return &site;
  }
  return nullptr;
}

uint64_t at_peak_of(const TrackerSnapshot& snapshot, AllocationKind kind) {
  const SiteFigures* site = site_of_kind(snapshot, kind);
  return site != nullptr ? site->bytes_at_peak : 0;
}

TEST(TrackerFigures, BytesAtPeakIsWhatEachSiteHeldAtTheProcessPeak) {
  Tracker tracker(stacks_off());
  tracker.on_alloc(1, 100, AllocationKind::kDevice, 0, 0);   // in use 100 (peak)
  tracker.on_alloc(2, 50, AllocationKind::kHost, 0, 0);      // 150 (peak)
  tracker.on_free(1);                                        // 50
  tracker.on_alloc(3, 120, AllocationKind::kManaged, 0, 0);  // 170 (peak)
  tracker.on_free(3);                                        // 50
  tracker.on_alloc(4, 30, AllocationKind::kDevice, 0, 0);    // 80

  TrackerSnapshot snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.peak_in_use_bytes, 170u);
  EXPECT_EQ(snapshot.in_use_bytes, 80u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kDevice), 0u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kHost), 50u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kManaged), 120u);
  EXPECT_EQ(site_of_kind(snapshot, AllocationKind::kDevice)->peak_bytes, 100u);
  EXPECT_EQ(site_of_kind(snapshot, AllocationKind::kDevice)->live_bytes, 30u);
  EXPECT_EQ(site_of_kind(snapshot, AllocationKind::kManaged)->peak_bytes, 120u);

  // A new peak: sites untouched since the last one report what they hold now.
  tracker.on_alloc(0xffff'0000'0000'0001ULL, 200, AllocationKind::kVmm, 0, 0);  // 280
  tracker.on_free(2);                                                           // 230
  snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.peak_in_use_bytes, 280u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kDevice), 30u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kHost), 50u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kManaged), 0u);
  EXPECT_EQ(at_peak_of(snapshot, AllocationKind::kVmm), 200u);
  uint64_t sum_at_peak = 0;
  for (const SiteFigures& site : snapshot.sites) sum_at_peak += site.bytes_at_peak;
  EXPECT_EQ(sum_at_peak, snapshot.peak_in_use_bytes);
  EXPECT_GT(snapshot.peak_time_ns, 0u);
}

// Each device has its peak: the process's peak and a site's figures at it are the sums of each
// device's, whenever the devices peaked.
TEST(TrackerFigures, PeaksArePerDeviceAndSummed) {
  Tracker tracker(stacks_off());
  tracker.on_alloc(1, 100, AllocationKind::kDevice, 0, 0);  // device 0 peaks at 100
  tracker.on_free(1);
  tracker.on_alloc(2, 70, AllocationKind::kDevice, 1, 0);  // device 1 peaks at 70
  tracker.on_alloc(3, 10, AllocationKind::kDevice, 0, 0);

  const TrackerSnapshot snapshot = tracker.snapshot();
  ASSERT_EQ(snapshot.sites.size(), 1u);  // one site (stack and kind) across the devices
  EXPECT_EQ(snapshot.in_use_bytes, 80u);
  EXPECT_EQ(snapshot.peak_in_use_bytes, 170u);
  EXPECT_EQ(snapshot.sites[0].bytes_at_peak, 170u);
  EXPECT_EQ(snapshot.sites[0].peak_bytes, 170u);
  EXPECT_EQ(snapshot.sites[0].live_bytes, 80u);
  EXPECT_EQ(snapshot.sites[0].live_count, 2u);
  EXPECT_EQ(snapshot.sites[0].total_count, 3u);
  EXPECT_EQ(tracker.in_use_bytes(), 80u);
  EXPECT_EQ(tracker.find(2)->site, 0u);
}

// The pool's tags (taken and given back with the device's figures lock held, as a pool holds it): a
// tag names its device, so untag_locked() finds the figures without being told.
TEST(TrackerFigures, TagsKeepTheirDeviceAndNameTheGlobalSite) {
  Tracker tracker(stacks_off());
  const uint64_t host = tracker.prepare(64, AllocationKind::kHost);
  const uint64_t device = tracker.prepare(64, AllocationKind::kDevice);
  const auto tag = [&tracker](uint64_t request, uint64_t size, int on, int32_t* site) {
    std::lock_guard<support::AdaptiveMutex> lock(tracker.figures_lock(on));
    return tracker.tag_locked(request, size, on, site);
  };
  const auto untag_on_device_5 = [&tracker](uint32_t tag, uint64_t size) {
    std::lock_guard<support::AdaptiveMutex> lock(tracker.figures_lock(5));
    return tracker.untag_locked(tag, size);
  };
  int32_t site_a = -1, site_b = -1, site_c = -1;
  const uint32_t a = tag(host, 64, 3, &site_a);
  const uint32_t b = tag(device, 512, 5, &site_b);
  const uint32_t c = tag(host, 128, 5, &site_c);
  EXPECT_EQ(site_a, 0);
  EXPECT_EQ(site_b, 1);
  EXPECT_EQ(site_c, 0);  // the same site on another device
  EXPECT_NE(a, c);
  EXPECT_EQ(tracker.in_use_bytes(), 704u);
  EXPECT_EQ(untag_on_device_5(c, 128), 0);
  EXPECT_EQ(untag_on_device_5(b, 512), 1);
  const TrackerSnapshot snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, 64u);
  EXPECT_EQ(snapshot.sites[0].live_bytes, 64u);
  EXPECT_EQ(snapshot.sites[0].total_bytes, 192u);
  EXPECT_EQ(snapshot.sites[1].live_bytes, 0u);
  EXPECT_EQ(snapshot.peak_in_use_bytes, 64u + 640u);
}

// The leaders are the sites holding the most, summed over devices; all sites holding live bytes are
// counted, listed or not.
TEST(TrackerFigures, LiveLeadersAreSummedOverDevicesAndCountTheSitesLeftOut) {
  Tracker tracker(stacks_off());
  tracker.on_alloc(1, 100, AllocationKind::kDevice, 0, 0);
  tracker.on_alloc(2, 300, AllocationKind::kDevice, 1, 0);
  tracker.on_alloc(3, 350, AllocationKind::kManaged, 0, 0);
  tracker.on_alloc(4, 10, AllocationKind::kHost, 2, 0);
  tracker.on_alloc(5, 10, AllocationKind::kAsync, 0, 0);
  tracker.on_free(5);  // a site with nothing live is not counted

  const Tracker::LiveLeaders leaders = tracker.live_leaders(2);
  ASSERT_EQ(leaders.sites.size(), 2u);
  EXPECT_EQ(leaders.sites[0].kind, AllocationKind::kDevice);
  EXPECT_EQ(leaders.sites[0].live_bytes, 400u);
  EXPECT_EQ(leaders.sites[0].live_count, 2u);
  EXPECT_EQ(leaders.sites[1].kind, AllocationKind::kManaged);
  EXPECT_EQ(leaders.live_sites, 3u);
  EXPECT_EQ(leaders.live_bytes_by_kind[static_cast<int>(AllocationKind::kHost)], 10u);
}

// An out-of-memory explanation lists the sites holding the failing device's memory: pinned host
// buffers (a DataLoader's pin_memory) and other devices' sites came first among them before.
TEST(TrackerFigures, OneDevicesLeadersLeaveOutPinnedHostMemoryAndOtherDevices) {
  Tracker tracker(stacks_off());
  tracker.on_alloc(1, 2000, AllocationKind::kHost, 0, 0);
  tracker.on_alloc(2, 300, AllocationKind::kDevice, 0, 0);
  tracker.on_alloc(3, 5000, AllocationKind::kDevice, 1, 0);  // another device's
  const Tracker::LiveLeaders leaders = tracker.live_leaders(2, {0, /*device_memory_only=*/true});
  ASSERT_EQ(leaders.sites.size(), 1u);
  EXPECT_EQ(leaders.sites[0].kind, AllocationKind::kDevice);
  EXPECT_EQ(leaders.sites[0].live_bytes, 300u) << "device 0's bytes of the site only";
  EXPECT_EQ(leaders.live_sites, 1u);
  EXPECT_EQ(leaders.live_bytes_by_kind[static_cast<int>(AllocationKind::kHost)], 2000u);
  const Tracker::LiveLeaders all = tracker.live_leaders(3);  // `sites N` lists all, summed
  ASSERT_EQ(all.sites.size(), 2u);
  EXPECT_EQ(all.sites[0].live_bytes, 5300u);
  EXPECT_EQ(all.sites[1].kind, AllocationKind::kHost);
}

// The tracker whose walk calls allocate_between_holds, and the allocations made there.
Tracker* walked_tracker = nullptr;
uint64_t allocations_between_holds = 0;

void allocate_between_holds(int device) {
  const uint64_t frames[] = {0xa110c, ++allocations_between_holds};
  walked_tracker->on_alloc_with_frames(0xa110c0000 + allocations_between_holds, 1,
                                       AllocationKind::kDevice, device, 0, frames, 2);
}

// `sites N` asks for the leaders every second and an out-of-memory explanation in the failing
// thread: with many sites, the walk lets go of the device's lock between chunks, and allocations on
// that device complete while it is under way, the answer still the sites holding the most.
TEST(TrackerFigures, LiveLeadersLetAllocationsThroughWhileWalkingManySites) {
  TrackerOptions options;
  options.between_site_holds = allocate_between_holds;
  Tracker tracker(options);
  walked_tracker = &tracker;
  constexpr uint64_t kSites = 3 * 4096 + 1;  // more than one hold's worth of sites
  for (uint64_t site = 1; site <= kSites; ++site) {
    const uint64_t frames[] = {site};
    tracker.on_alloc_with_frames(site, 100 + site, AllocationKind::kDevice, 0, 0, frames, 1);
  }

  const Tracker::LiveLeaders leaders = tracker.live_leaders(2);
  EXPECT_GE(allocations_between_holds, 3u);
  ASSERT_EQ(leaders.sites.size(), 2u);
  EXPECT_EQ(leaders.sites[0].live_bytes, 100 + kSites);
  EXPECT_EQ(leaders.sites[1].live_bytes, 100 + kSites - 1);
  EXPECT_GE(leaders.live_sites, kSites);

  const uint64_t before = allocations_between_holds;
  std::vector<uint64_t> live;
  tracker.live_bytes_by_site(&live);
  EXPECT_GE(allocations_between_holds, before + 3);
  EXPECT_EQ(live[kSites - 1], 100 + kSites);
  walked_tracker = nullptr;
}

TEST(TrackerFigures, EachKindIsItsOwnSiteAndCountsAreExact) {
  Tracker tracker(stacks_off());
  uint64_t key = 1;
  for (int kind = 0; kind < kAllocationKindCount; ++kind) {
    for (int i = 0; i <= kind; ++i) {
      tracker.on_alloc(key++, 1000, static_cast<AllocationKind>(kind), 0, 0);
    }
  }
  const TrackerSnapshot snapshot = tracker.snapshot();
  ASSERT_EQ(snapshot.sites.size(), static_cast<size_t>(kAllocationKindCount));
  for (int kind = 0; kind < kAllocationKindCount; ++kind) {
    const SiteFigures* site = site_of_kind(snapshot, static_cast<AllocationKind>(kind));
    ASSERT_NE(site, nullptr);
    EXPECT_EQ(site->stack, -1);
    EXPECT_EQ(site->live_count, static_cast<uint64_t>(kind + 1));
    EXPECT_EQ(site->live_bytes, 1000u * (kind + 1));
    EXPECT_EQ(site->total_count, static_cast<uint64_t>(kind + 1));
  }
}

TEST(TrackerFigures, UnknownFreesAreIgnoredAndLiveEntriesKeepTheirDetails) {
  Tracker tracker(stacks_off());
  tracker.on_free(12345);
  tracker.on_alloc(0, 10, AllocationKind::kDevice, 0, 0);  // a null pointer is never live
  tracker.on_alloc(0x7f00'0000'1000, 4096, AllocationKind::kAsync, 3, 0xabc);
  tracker.on_free(0x7f00'0000'2000);

  const std::optional<LiveAllocation> live = tracker.find(0x7f00'0000'1000);
  ASSERT_TRUE(live.has_value());
  EXPECT_EQ(live->size, 4096u);
  EXPECT_EQ(live->device, 3);
  EXPECT_EQ(live->stream, 0xabcu);
  EXPECT_EQ(tracker.snapshot().in_use_bytes, 4096u);

  tracker.on_free(0x7f00'0000'1000);
  EXPECT_FALSE(tracker.find(0x7f00'0000'1000).has_value());
  const TrackerSnapshot snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, 0u);
  ASSERT_EQ(snapshot.sites.size(), 1u);
  EXPECT_EQ(snapshot.sites[0].total_count, 1u);
}

TEST(TrackerFigures, AKeyAllocatedAgainWithoutAFreeRetiresTheOldAllocation) {
  Tracker tracker(stacks_off());
  tracker.on_alloc(7, 100, AllocationKind::kDevice, 0, 0);
  tracker.on_alloc(7, 300, AllocationKind::kDevice, 0, 0);
  const TrackerSnapshot snapshot = tracker.snapshot();
  EXPECT_EQ(snapshot.in_use_bytes, 300u);
  EXPECT_EQ(snapshot.sites[0].live_count, 1u);
  EXPECT_EQ(snapshot.sites[0].total_count, 2u);
}

TEST(TrackerFigures, SampledEstimateOfTotalBytesIsWithinFivePercent) {
  TrackerOptions options;
  options.stacks = StackMode::kSample;
  options.sample_bytes = kMiB;
  options.sample_seed = 42;
  Tracker tracker(options);
  std::mt19937_64 random(7);
  std::uniform_real_distribution<double> log_size(std::log(256.0), std::log(16.0 * kMiB));
  uint64_t true_total = 0;
  for (uint64_t key = 1; key <= 100000; ++key) {
    const auto size = static_cast<uint64_t>(std::exp(log_size(random)));
    true_total += size;
    tracker.on_alloc(key, size, AllocationKind::kDevice, 0, 0);
    if (key % 2 == 0) tracker.on_free(key);
  }
  const TrackerSnapshot snapshot = tracker.snapshot();
  uint64_t estimated_total = 0;
  for (const SiteFigures& site : snapshot.sites) estimated_total += site.total_bytes;
  const double error = std::abs(static_cast<double>(estimated_total) - true_total) / true_total;
  EXPECT_LT(error, 0.05) << "estimated " << estimated_total << " true " << true_total;

  // Unsampled allocations are not tracked at all; freeing everything returns the estimate to 0.
  size_t tracked = 0;
  for (uint64_t key = 1; key <= 100000; key += 2) {
    if (tracker.find(key)) ++tracked;
    tracker.on_free(key);
  }
  EXPECT_GT(tracked, 0u);
  EXPECT_LT(tracked, 50000u);
  EXPECT_EQ(tracker.snapshot().in_use_bytes, 0u);
  for (const SiteFigures& site : tracker.snapshot().sites) {
    EXPECT_EQ(site.live_bytes, 0u);
    EXPECT_EQ(site.live_count, 0u);
  }
}

TEST(TrackerFigures, GivenFramesAreInternedAndCutToTheConfiguredDepth) {
  TrackerOptions options;
  options.stack_depth = 3;
  Tracker tracker(options);
  const uint64_t frames[] = {0x100, 0x200, 0x300, 0x400};
  tracker.on_alloc_with_frames(1, 10, AllocationKind::kDevice, 0, 0, frames, 4);
  tracker.on_alloc_with_frames(2, 20, AllocationKind::kDevice, 0, 0, frames, 3);
  tracker.on_alloc_with_frames(3, 40, AllocationKind::kHost, 0, 0, frames, 2);
  const TrackerSnapshot snapshot = tracker.snapshot();
  ASSERT_EQ(tracker.stacks().stack_count(), 2u);
  ASSERT_EQ(snapshot.sites.size(), 2u);
  EXPECT_EQ(snapshot.sites[0].stack, 0);
  EXPECT_EQ(snapshot.sites[0].live_bytes, 30u);
  EXPECT_EQ(snapshot.sites[0].live_count, 2u);
  EXPECT_EQ(tracker.stacks().frames_of(0).depth, 3u);
  EXPECT_EQ(snapshot.sites[1].stack, 1);
  EXPECT_EQ(snapshot.sites[1].kind, AllocationKind::kHost);
}

// Each thread allocates through its own recursion depth, so stacks are interned concurrently.
__attribute__((noinline)) void allocate_at_depth(Tracker& tracker, int depth, uint64_t key,
                                                 uint64_t size) {
  if (depth > 0) {
    allocate_at_depth(tracker, depth - 1, key, size);
  } else {
    tracker.on_alloc(key, size, AllocationKind::kDevice, 0, 0);
  }
  asm volatile("" ::: "memory");
}

TEST(TrackerFigures, EightThreadsKeepExactFigures) {
  TrackerOptions options;
  options.own_module = {};  // this binary's frames are the callers here: keep them
  Tracker tracker(options);
  constexpr int kThreads = 8;
  constexpr uint64_t kPerThread = 20000;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&tracker, t] {
      for (uint64_t i = 0; i < kPerThread; ++i) {
        const uint64_t key = (static_cast<uint64_t>(t) << 32) | (i + 1);
        allocate_at_depth(tracker, static_cast<int>(i % 5), key, 64 + t);
        if (i % 4 != 0) tracker.on_free(key);  // a quarter stays live
      }
    });
  }
  for (std::thread& thread : threads) thread.join();

  const TrackerSnapshot snapshot = tracker.snapshot();
  uint64_t live_count = 0, total_count = 0, live_bytes = 0, expected_live_bytes = 0;
  for (const SiteFigures& site : snapshot.sites) {
    live_count += site.live_count;
    total_count += site.total_count;
    live_bytes += site.live_bytes;
  }
  for (int t = 0; t < kThreads; ++t) expected_live_bytes += (kPerThread / 4) * (64 + t);
  EXPECT_EQ(total_count, kThreads * kPerThread);
  EXPECT_EQ(live_count, kThreads * kPerThread / 4);
  EXPECT_EQ(live_bytes, expected_live_bytes);
  EXPECT_EQ(snapshot.in_use_bytes, expected_live_bytes);
  EXPECT_EQ(tracker.memory_usage().live_allocations, kThreads * kPerThread / 4);
  // Five depths times eight threads' distinct callers at most; far fewer than allocations.
  EXPECT_GE(tracker.stacks().stack_count(), 5u);
  EXPECT_LE(tracker.stacks().stack_count(), 5u * kThreads);
}

}  // namespace
}  // namespace vramshim::attribution
