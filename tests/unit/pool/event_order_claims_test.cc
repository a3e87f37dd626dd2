// The pool tells the attribution of each allocation and free, and says when the address's last use
// was one the attribution was told of by the same thread (LastUse::kThisThread: a thread cache's,
// without the device lock) or under the same lock (LastUse::kThisLock: the pool's), which lets the
// event trace stamp the event more cheaply (EventTrace::record_after_own, record_under_lock). What
// this holds: each claim is true for every event, whichever thread used a block before, whether it
// went through thread caches and whether or not its allocations were attributed; the trace then
// keeps every address's allocations and frees in order; and a cache makes its claim for all it
// serves but its first allocation after each locked call of its thread (the reason for the claim).
#include <gtest/gtest.h>

#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "shim/attribution/tracker.h"
#include "shim/pool/size_policy.h"
#include "tests/unit/pool/cached_pool.h"
#include "tests/unit/pool/pool_attribution.h"

namespace vramshim::pool {
namespace {

using attribution::AllocationKind;
using testing::CachedPool;
using testing::PassedBlocks;

// The attribution of PoolAttribution, with every allocation and free it is told of logged in the
// order of the calls. The calls for one address are made under the lock that passes the block on
// (a thread cache's or the device's), so the log has each address's uses in their true order.
class LoggedTagger : public AllocationTagger {
 public:
  struct Use {
    CUdeviceptr ptr;
    std::thread::id thread;
    bool allocation;
    bool ordered_among_threads;  // by the lock, or LastUse::kAnyThread
    // Meaningful while one thread uses the pool: whether the call was made under the device lock.
    bool device_lock_held;
    bool told_under_lock;  // by tag() or untag()
    bool said_after_lock;  // LastUse::kThisLock
  };

  support::AdaptiveMutex& figures_lock(int device) noexcept override {
    return attribution_.tagger.figures_lock(device);
  }
  uint32_t tag(int device, uint64_t request, uint64_t size, uint64_t ptr, LastUse last_use,
               AllocationLedger* ledger) noexcept override {
    log(ptr, true, true, last_use);
    return attribution_.tagger.tag(device, request, size, ptr, last_use, ledger);
  }
  void untag(int device, uint32_t tag, uint64_t size, uint64_t ptr,
             LastUse last_use) noexcept override {
    if (ptr != 0) log(ptr, false, true, last_use);
    attribution_.tagger.untag(device, tag, size, ptr, last_use);
  }
  AllocationLedger* open_ledger(int device, support::AdaptiveMutex& cache_lock) noexcept override {
    return attribution_.tagger.open_ledger(device, cache_lock);
  }
  void close_ledger(int device, AllocationLedger& ledger) noexcept override {
    attribution_.tagger.close_ledger(device, ledger);
  }
  bool tag_from_credit(AllocationLedger& ledger, int device, uint64_t request, uint64_t size,
                       uint64_t ptr, LastUse last_use, uint32_t* tag) noexcept override {
    if (!attribution_.tagger.tag_from_credit(ledger, device, request, size, ptr, last_use, tag)) {
      return false;
    }
    log(ptr, true, last_use == LastUse::kAnyThread);
    return true;
  }
  bool untag_to_credit(AllocationLedger& ledger, int device, uint64_t request, uint32_t tag,
                       uint64_t size, uint64_t ptr, LastUse last_use) noexcept override {
    if (!attribution_.tagger.untag_to_credit(ledger, device, request, tag, size, ptr, last_use)) {
      return false;
    }
    log(ptr, false, last_use == LastUse::kAnyThread);
    return true;
  }

  attribution::Tracker& tracker() { return attribution_.tracker; }
  attribution::EventTrace& trace() { return attribution_.trace; }
  std::vector<Use> uses() {
    std::lock_guard<std::mutex> guard(mutex_);
    return uses_;
  }

 private:
  // `locked_use`: the LastUse of a call by tag() or untag(); none for a thread cache's.
  void log(CUdeviceptr ptr, bool allocation, bool ordered_among_threads,
           std::optional<LastUse> locked_use = std::nullopt) {
    support::AdaptiveMutex& device_lock = figures_lock(0);
    const bool device_lock_held = !device_lock.try_lock();
    if (!device_lock_held) device_lock.unlock();
    std::lock_guard<std::mutex> guard(mutex_);
    uses_.push_back({ptr, std::this_thread::get_id(), allocation, ordered_among_threads,
                     device_lock_held, locked_use.has_value(), locked_use == LastUse::kThisLock});
  }

  testing::PoolAttribution attribution_{1 << 20};
  std::mutex mutex_;
  std::vector<Use> uses_;
};

// Four threads allocate sizes their caches serve (or, `varied_sizes`, sizes from 512 B to 1 MiB,
// which few of them serve: most allocations are the pool's, under its lock) and free them, most
// allocations attributed; the others (as under VRAMSHIM_STACKS=sample, where an allocation not
// sampled has no request) go to the next thread to free. Now and then a thread ends (its cache
// drained into the pool, as at thread exit). So blocks move between threads, and between the
// caches and the pool, in every way the attribution hears nothing of.
void run_threads(CachedPool& t, LoggedTagger& tagger, bool varied_sizes = false) {
  constexpr int kThreads = 4;
  PassedBlocks passed[kThreads];
  std::vector<std::thread> threads;
  for (int id = 0; id < kThreads; ++id) {
    threads.emplace_back([&, id] {
      std::mt19937 rng(id + 1);
      const size_t sizes[] = {512, 4096, 12288};
      std::vector<CUdeviceptr> live;
      for (int i = 0; i < 30000; ++i) {
        const unsigned choice = rng() % 16;
        if (choice < 8 || live.empty()) {
          const size_t bytes = varied_sizes ? 512 + rng() % (size_t{1} << 20) : sizes[rng() % 3];
          const bool attributed = choice >= 2;
          const uint64_t request = attributed ? tagger.tracker().prepare(SizePolicy::round(bytes),
                                                                         AllocationKind::kDevice)
                                              : 0;
          CUdeviceptr ptr = 0;
          ASSERT_EQ(t.allocate(bytes, &ptr, request), CUDA_SUCCESS);
          if (attributed) {
            live.push_back(ptr);
          } else {
            passed[(id + 1) % kThreads].pass(ptr);
          }
        } else if (choice < 15) {
          const size_t index = rng() % live.size();
          ASSERT_TRUE(t.free(live[index]).owned);
          live[index] = live.back();
          live.pop_back();
        } else if (rng() % 16 == 0) {
          t.close_mine();
        }
        if (const CUdeviceptr theirs = passed[id].take()) {
          ASSERT_TRUE(t.free(theirs).owned);
        }
      }
      for (CUdeviceptr ptr : live) ASSERT_TRUE(t.free(ptr).owned);
      t.close_mine();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (PassedBlocks& left : passed) {
    while (const CUdeviceptr ptr = left.take()) ASSERT_TRUE(t.free(ptr).owned);
  }
}

// Each use said to follow the thread's own: the address's use before it was this thread's, or came
// before this thread's last use that was ordered among all threads. Returns how many were said so.
size_t expect_uses_follow_their_threads(const std::vector<LoggedTagger::Use>& uses) {
  std::map<CUdeviceptr, size_t> last_of_address;
  std::map<std::thread::id, size_t> last_ordered_of_thread;
  size_t said_own = 0, wrongly_said_own = 0;
  for (size_t i = 0; i < uses.size(); ++i) {
    const LoggedTagger::Use& use = uses[i];
    if (use.ordered_among_threads) {
      last_ordered_of_thread[use.thread] = i;
    } else {
      ++said_own;
      const auto before = last_of_address.find(use.ptr);
      const auto ordered = last_ordered_of_thread.find(use.thread);
      if (before != last_of_address.end() && uses[before->second].thread != use.thread &&
          (ordered == last_ordered_of_thread.end() || before->second > ordered->second)) {
        if (wrongly_said_own++ < 5) {
          ADD_FAILURE() << "use " << i << " of 0x" << std::hex << use.ptr << std::dec
                        << " said to follow its thread's own, after use " << before->second
                        << " by another thread";
        }
      }
    }
    last_of_address[use.ptr] = i;
  }
  EXPECT_EQ(wrongly_said_own, 0u) << "of " << said_own;
  return said_own;
}

// Each use said to follow the lock's own: the address's use before it was told under the lock.
// Returns how many were said so.
size_t expect_uses_follow_the_locks(const std::vector<LoggedTagger::Use>& uses) {
  std::map<CUdeviceptr, size_t> last_of_address;
  size_t said_after_lock = 0, wrongly_said = 0;
  for (size_t i = 0; i < uses.size(); ++i) {
    const LoggedTagger::Use& use = uses[i];
    if (use.said_after_lock) {
      ++said_after_lock;
      const auto before = last_of_address.find(use.ptr);
      if ((before == last_of_address.end() || !uses[before->second].told_under_lock) &&
          wrongly_said++ < 5) {
        ADD_FAILURE() << "use " << i << " of 0x" << std::hex << use.ptr << std::dec
                      << " said to follow the lock's own, after "
                      << (before == last_of_address.end()
                              ? std::string("no use")
                              : "use " + std::to_string(before->second) + " by a thread cache");
      }
    }
    last_of_address[use.ptr] = i;
  }
  EXPECT_EQ(wrongly_said, 0u) << "of " << said_after_lock;
  return said_after_lock;
}

// The window has every event the pool told of (a read drops the events before two allocations or
// two frees of one address in a row), and the addresses alternate as the pool used them.
void expect_trace_keeps_every_address_in_order(attribution::EventTrace& trace) {
  const attribution::TraceWindow window = trace.read();
  ASSERT_LT(window.recorded, window.capacity);
  EXPECT_EQ(window.events.size(), window.recorded);
  std::map<uint64_t, attribution::EventType> last_of_address;
  for (const attribution::TraceEvent& event : window.events) {
    const auto [it, first] = last_of_address.try_emplace(event.address, event.type);
    if (!first) {
      ASSERT_NE(it->second, event.type) << "0x" << std::hex << event.address;
      it->second = event.type;
    }
  }
}

TEST(ThreadCacheEventOrder, AUseSaidToFollowTheThreadsOwnDoesWhateverThreadUsedTheBlockBefore) {
  LoggedTagger tagger;
  CachedPool t({}, &tagger);
  run_threads(t, tagger);
  const size_t said_own = expect_uses_follow_their_threads(tagger.uses());
  // Not a check of nothing: many uses were said to follow the thread's own.
  EXPECT_GT(said_own, tagger.uses().size() / 4) << "of " << tagger.uses().size();
}

TEST(ThreadCacheEventOrder, AfterEachLockedCallTheCachesNextAllocationIsOrderedAmongThreads) {
  // A locked call may bring blocks of the pool into the thread's cache (a hand-out through it, a
  // refill, the free of a block the pool handed out), and the attribution may not have heard of
  // their last use (an allocation not attributed): the next allocation the cache serves is ordered
  // among all threads', which orders after it every use of every block the cache holds then. The
  // cache's other allocations follow the thread's own. (All allocations are attributed here, so the
  // log has every locked call.)
  LoggedTagger tagger;
  CachedPool t({}, &tagger);
  std::mt19937 rng(3);
  const size_t sizes[] = {512, 4096, 12288, size_t{2} << 20};
  std::vector<CUdeviceptr> live;
  for (int i = 0; i < 20000; ++i) {
    if (live.size() < 40 && (rng() % 2 == 0 || live.empty())) {
      const size_t bytes = sizes[rng() % 4];
      const uint64_t request =
          tagger.tracker().prepare(SizePolicy::round(bytes), AllocationKind::kDevice);
      CUdeviceptr ptr = 0;
      ASSERT_EQ(t.allocate(bytes, &ptr, request), CUDA_SUCCESS);
      live.push_back(ptr);
    } else {
      const size_t index = rng() % live.size();
      ASSERT_TRUE(t.free(live[index]).owned);
      live[index] = live.back();
      live.pop_back();
    }
  }
  bool after_locked_call = false;
  size_t allocations = 0, from_cache = 0, wrong = 0;
  const std::vector<LoggedTagger::Use> uses = tagger.uses();
  for (size_t i = 0; i < uses.size(); ++i) {
    const LoggedTagger::Use& use = uses[i];
    allocations += use.allocation ? 1 : 0;
    if (use.device_lock_held) {
      after_locked_call = true;
    } else if (use.allocation) {
      ++from_cache;
      if (use.ordered_among_threads != after_locked_call && wrong++ < 5) {
        ADD_FAILURE() << "use " << i << ", an allocation from the cache "
                      << (after_locked_call
                              ? "first after a locked call, said to follow the "
                                "thread's own"
                              : "not first after a locked call, ordered among threads");
      }
      after_locked_call = false;
    }
  }
  EXPECT_EQ(wrong, 0u) << "of " << from_cache << " allocations from the cache";
  EXPECT_GT(from_cache, allocations / 4) << "of " << allocations;
}

TEST(ThreadCacheEventOrder, AThreadReusingItsSizesSaysItsUsesFollowItsOwn) {
  LoggedTagger tagger;
  CachedPool t({}, &tagger);
  const uint64_t request = tagger.tracker().prepare(4096, AllocationKind::kDevice);
  for (int i = 0; i < 1000; ++i) {
    CUdeviceptr ptrs[3] = {};
    for (CUdeviceptr& ptr : ptrs) ASSERT_EQ(t.allocate(4096, &ptr, request), CUDA_SUCCESS);
    for (CUdeviceptr ptr : ptrs) ASSERT_TRUE(t.free(ptr).owned);
  }
  const std::vector<LoggedTagger::Use> uses = tagger.uses();
  size_t said_own = 0;
  for (const LoggedTagger::Use& use : uses) said_own += use.ordered_among_threads ? 0 : 1;
  EXPECT_GT(said_own, uses.size() * 95 / 100) << "of " << uses.size();
}

TEST(ThreadCacheEventOrder, TheTraceKeepsEveryAddresssAllocationsAndFreesInOrder) {
  LoggedTagger tagger;
  CachedPool t({}, &tagger);
  run_threads(t, tagger);
  expect_trace_keeps_every_address_in_order(tagger.trace());
}

TEST(LockEventOrder, AUseSaidToFollowTheLocksOwnFollowsAUseToldUnderTheLock) {
  for (const bool varied_sizes : {false, true}) {
    SCOPED_TRACE(varied_sizes ? "varied sizes" : "sizes the caches serve");
    LoggedTagger tagger;
    CachedPool t({}, &tagger);
    run_threads(t, tagger, varied_sizes);
    const std::vector<LoggedTagger::Use> uses = tagger.uses();
    const size_t said_after_lock = expect_uses_follow_the_locks(uses);
    size_t told_under_lock = 0;
    for (const LoggedTagger::Use& use : uses) told_under_lock += use.told_under_lock ? 1 : 0;
    // Not a check of nothing: the claim is made, for most of the pool's own uses when it serves
    // most allocations itself.
    EXPECT_GT(said_after_lock, varied_sizes ? told_under_lock / 2 : 0) << "of " << told_under_lock;
  }
}

TEST(LockEventOrder, TheTraceKeepsEveryAddresssAllocationsAndFreesInOrderWithVariedSizes) {
  LoggedTagger tagger;
  CachedPool t({}, &tagger);
  run_threads(t, tagger, /*varied_sizes=*/true);
  expect_trace_keeps_every_address_in_order(tagger.trace());
}

}  // namespace
}  // namespace vramshim::pool
