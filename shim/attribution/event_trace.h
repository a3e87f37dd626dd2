// The recent allocation events (docs/design.md, "Memory over time"): each thread that records
// writes into a ring of its own, so recording takes no lock (but once per chunk of 4096 events)
// and writes no cache line another thread writes; a reader merges the rings by time and keeps the
// newest `capacity` events.
#pragma once

#include <time.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <vector>

namespace vramshim::attribution {

enum class EventType : uint8_t {
  kAlloc,
  kFree,
  kSegmentAlloc,
  kSegmentFree,
  kFlush,
  kTrim,
  kOom,
};
// The report's name of a type: "alloc", "free", "segment_alloc", …
const char* event_type_name(EventType type);

struct TraceEvent {
  double time;  // seconds since the Unix epoch
  EventType type;
  int device;        // -1: none (flush and trim cover every device)
  uint64_t address;  // 0: none
  uint64_t size;
  uint64_t stream;  // 0: the call names none
  int32_t site;     // the tracker's site index, -1: none
};

struct TraceWindow {
  size_t capacity = 0;
  uint64_t recorded = 0;  // events recorded since the start, the window's and older ones
  // The newest events, oldest first: every event recorded from the first one's time until the
  // reading began (none of that span is missing), at most `capacity`.
  std::vector<TraceEvent> events;
};

class EventTrace {
 public:
  // Default VRAMSHIM_TRACE capacity.
  static constexpr size_t kDefaultCapacity = 262144;

  // capacity 0: off, record() does nothing.
  explicit EventTrace(size_t capacity);
  ~EventTrace();
  EventTrace(const EventTrace&) = delete;
  EventTrace& operator=(const EventTrace&) = delete;

  bool enabled() const { return capacity_ > 0; }
  size_t capacity() const { return capacity_; }

  // Lock-free and allocation-free but once per 4096 of the thread's events, when its ring takes a
  // chunk for them (under the trace's lock, never waiting for a reader); an event that finds no
  // memory, or comes while read() runs, is dropped. The rings hold together at most one full
  // ring's chunks and two per thread that recorded (more only while every ring is down to the
  // chunk its thread writes): past that, a ring takes the chunk whose events are the oldest of
  // all, which keeps the newest `capacity` events of all threads.
  void record(EventType type, int device, uint64_t address, uint64_t size, uint64_t stream,
              int32_t site) noexcept {
    if (capacity_ > 0) record_enabled(type, device, address, size, stream, site, Stamp::kNow);
  }
  // record() for an event whose address's previous event this thread recorded (a thread cache's
  // allocation of a block it freed, its free of a block it handed out): ordered after this
  // thread's earlier events and before every later event of any thread, as record()'s are, but its
  // time may lag by up to one tick of the kernel's coarse clock (1-10 ms, 4 ms on Debian), which
  // makes it cheaper (see ticks_after_own in event_trace.cc).
  void record_after_own(EventType type, int device, uint64_t address, uint64_t size,
                        uint64_t stream, int32_t site) noexcept {
    if (capacity_ > 0) record_enabled(type, device, address, size, stream, site, Stamp::kAfterOwn);
  }

  // The time stamps of the events recorded under one lock, which guards it (a device's figures
  // lock, under which its pools tell of their allocations and frees).
  struct LockClock {
    uint64_t ticks = 0;      // the newest stamp given under the lock
    uint64_t coarse_ns = 0;  // the coarse clock's reading when the counter was last read for it
  };
  // record() for an event recorded under the lock that guards `clock`: ordered after every event
  // recorded with `clock` before it, as well as record()'s are. `after_lock`: the address's
  // previous event was recorded with `clock` too; then the event may be stamped from the clock's
  // last reading of the counter, and its time may lag by up to one tick of the kernel's coarse
  // clock, as record_after_own's (a pool's allocations and frees under its lock, most of all of
  // varied sizes, read the counter once per tick instead of once per event).
  void record_under_lock(LockClock& clock, bool after_lock, EventType type, int device,
                         uint64_t address, uint64_t size, uint64_t stream, int32_t site) noexcept {
    if (capacity_ > 0) {
      record_enabled(type, device, address, size, stream, site,
                     after_lock ? Stamp::kAfterLock : Stamp::kUnderLock, &clock);
    }
  }

  // Safe while other threads record; they drop their events while it runs.
  TraceWindow read() const;
  // Host memory held by the rings.
  size_t memory_bytes() const;

  // Each thread's ring, reused by a thread that starts after its owner ended, and the pieces of
  // its memory.
  struct Ring;
  struct Chunk;

 private:
  // How an event's time stamp is made: from the counter read now (record), or cheaper where an
  // order is given by the thread (record_after_own) or by a lock (record_under_lock).
  enum class Stamp : uint8_t { kNow, kAfterOwn, kUnderLock, kAfterLock };
  void record_enabled(EventType type, int device, uint64_t address, uint64_t size, uint64_t stream,
                      int32_t site, Stamp stamp, LockClock* clock = nullptr) noexcept;
  Ring* ring_of_this_thread() noexcept;
  // The slow part of ring_of_this_thread(): the thread's first event in this trace. Kept out of
  // line, so that recording saves no registers for it.
  [[gnu::noinline, gnu::cold]] Ring* claim_ring() noexcept;
  // Points the ring's cursor at the chunk its next event goes to, which it takes (take_chunk) when
  // it has none there; false when it cannot (the event is dropped). Once per chunk of events.
  [[gnu::noinline, gnu::cold]] bool enter_next_chunk(Ring& ring) noexcept;
  // A chunk for a ring that has none at `place`, where its next event goes: a new one while the
  // rings hold fewer than their budget, else the oldest of all rings' (reclaim_oldest_chunk), else
  // a new one all the same; null while a reader copies, when host memory runs out, or when a chunk
  // was put back at `place` meanwhile.
  Chunk* take_chunk(const std::atomic<Chunk*>& place) noexcept;
  // Requires rings_mutex_. The chunk holding the oldest events still in a ring, taken from it (its
  // events are gone, and every window starts after them); null when every ring's oldest events are
  // in the chunk its thread writes, or when the chosen chunk went back to its ring, whose thread
  // came for it meanwhile (then `put_back`: the next choice skips that one).
  Chunk* reclaim_oldest_chunk(bool& put_back) noexcept;

  const size_t capacity_;
  const uint64_t id_;  // tells this trace's thread rings from those of a trace destroyed before
  // A reading of the events' clock and of another clock at one instant.
  struct ClockReading {
    uint64_t ticks;
    uint64_t ns;
  };
  static ClockReading read_with_ticks(clockid_t clock);
  // The events' clock and the monotonic clock at the start, to measure the former's rate.
  const ClockReading start_;
  // Taken by a thread's first event, by a ring taking a chunk, and by readers.
  mutable std::mutex rings_mutex_;
  std::vector<Ring*> rings_;
  const size_t chunk_events_;  // the events of every chunk: 4096, or the capacity's slots if fewer
  std::atomic<size_t> chunks_made_{0};
  uint64_t reclaimed_ticks_ = 0;  // the newest event taken with a chunk (rings_mutex_)
  // While a reader copies the rings, threads drop their events rather than overwrite what it
  // copies (a reader slower than the writers, or descheduled, would otherwise lose its whole
  // window); a later window starts after the last drop. Written by readers only, so the threads
  // that read it share the cache line without contention.
  alignas(64) mutable std::atomic<bool> reading_{false};
};

}  // namespace vramshim::attribution
