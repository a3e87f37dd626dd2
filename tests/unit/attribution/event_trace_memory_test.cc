// What reading the event trace costs in host memory, with many threads' rings full: the reader
// keeps the newest `capacity` events as it goes, not a copy of every ring.
#include <gtest/gtest.h>
#include <malloc.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <thread>
#include <vector>

#include "shim/attribution/event_trace.h"
#include "tests/support/thread_barrier.h"

namespace {

// The heap bytes this program holds now and at most since the last reset, counted by every
// operator new and delete.
std::atomic<size_t> g_held{0};
std::atomic<size_t> g_peak{0};

void note_held(size_t held) {
  size_t peak = g_peak.load(std::memory_order_relaxed);
  while (held > peak && !g_peak.compare_exchange_weak(peak, held, std::memory_order_relaxed)) {
  }
}

}  // namespace

void* operator new(size_t size) {
  void* memory = std::malloc(size == 0 ? 1 : size);
  if (memory == nullptr) throw std::bad_alloc();
  note_held(g_held.fetch_add(malloc_usable_size(memory), std::memory_order_relaxed) +
            malloc_usable_size(memory));
  return memory;
}
void* operator new[](size_t size) { return operator new(size); }
void* operator new(size_t size, const std::nothrow_t&) noexcept {
  try {
    return operator new(size);
  } catch (...) {
    return nullptr;
  }
}
void* operator new[](size_t size, const std::nothrow_t&) noexcept {
  return operator new(size, std::nothrow);
}
void operator delete(void* memory) noexcept {
  if (memory == nullptr) return;
  g_held.fetch_sub(malloc_usable_size(memory), std::memory_order_relaxed);
  std::free(memory);
}
void operator delete[](void* memory) noexcept { operator delete(memory); }
void operator delete(void* memory, size_t) noexcept { operator delete(memory); }
void operator delete[](void* memory, size_t) noexcept { operator delete(memory); }

namespace vramshim::attribution {
namespace {

TEST(EventTraceMemory, AReadOfManyFullRingsHoldsAboutTwoWindows) {
  constexpr size_t kCapacity = 4096;
  constexpr int kThreads = 16;
  EventTrace trace(kCapacity);
  testing::ThreadBarrier all_recording(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      trace.record(EventType::kAlloc, 0, 0x1000, 512, 0, t);
      all_recording.arrive_and_wait();  // a ring each
      for (uint64_t i = 1; i <= 2 * kCapacity; ++i) {
        trace.record(i % 2 == 0 ? EventType::kAlloc : EventType::kFree, 0,
                     (uint64_t{1} << 40) * (t + 1) + (i / 2) * 512, 512, 0, t);
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  g_peak.store(g_held.load());
  const size_t before = g_held.load();
  const TraceWindow window = trace.read();
  ASSERT_EQ(window.events.size(), kCapacity);
  const size_t read_peak = g_peak.load() - before;
  // Each copied event takes 72 bytes: all 16 rings copied took 16 x 4,097 of them (4.7 MB, and
  // twice that while the copy's array grew); the newest two windows take 0.6 MB.
  EXPECT_LT(read_peak, size_t{2} << 20) << "bytes held while reading";
  RecordProperty("read_peak_bytes", std::to_string(read_peak));
}

}  // namespace
}  // namespace vramshim::attribution
