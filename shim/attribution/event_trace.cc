#include "shim/attribution/event_trace.h"

#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "shim/support/room_for_one_more.h"

namespace vramshim::attribution {
namespace {

constexpr size_t kChunkEvents = 4096;
// How far ahead of its writes a ring's lines are fetched.
constexpr size_t kPrefetchEvents = 16;
// Events a reader copies between checks that their thread has not overwritten them.
constexpr uint64_t kCheckedBlock = 256;

uint64_t monotonic_ns(clockid_t clock = CLOCK_MONOTONIC) {
  timespec now{};
  clock_gettime(clock, &now);
  return static_cast<uint64_t>(now.tv_sec) * 1000000000ULL + static_cast<uint64_t>(now.tv_nsec);
}

// The events' clock: the time-stamp counter where there is one (a few ns; constant-rate and
// synchronized across cores on the x86 machines the shim targets), else the monotonic clock.
uint64_t clock_ticks() {
#if defined(__x86_64__)
  return __rdtsc();
#else
  return monotonic_ns();
#endif
}

// One event as a ring stores it: atomics, so a reader may copy a slot while its thread overwrites
// it (it then discards the slot, see read()).
struct StoredEvent {
  std::atomic<uint64_t> ticks;
  std::atomic<uint64_t> address;
  std::atomic<uint64_t> size;
  std::atomic<uint64_t> stream;
  std::atomic<uint64_t> packed;  // site (32 bits) | device + 1 (16) | type (8)
};

uint64_t pack(EventType type, int device, int32_t site) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(site)) << 32) |
         (static_cast<uint64_t>(static_cast<uint16_t>(device + 1)) << 8) |
         static_cast<uint64_t>(type);
}

// The ids of the traces alive, so that a thread ending after its trace was destroyed leaves the
// freed ring alone. Never destroyed: threads end after static destructors ran.
struct LiveTraces {
  std::mutex mutex;
  std::vector<uint64_t> ids;
  uint64_t next_id = 1;
};
LiveTraces& live_traces() {
  static LiveTraces* const live = new LiveTraces;
  return *live;
}

}  // namespace

// A piece of a ring: `chunk_events` consecutive events of one thread, and the index in its ring
// of the first of them.
struct EventTrace::Chunk {
  explicit Chunk(size_t events) : stored(new StoredEvent[events]) {}
  std::atomic<uint64_t> first_index{0};
  const std::unique_ptr<StoredEvent[]> stored;
};

// A ring holds at least one slot more than the trace's capacity: the slot its thread may be
// writing, so a reader can still trust the newest `capacity` published events. Its slots come in
// chunks, each made (or taken from another ring) when its thread first writes there.
struct EventTrace::Ring {
  static constexpr size_t kNoChunk = SIZE_MAX;

  Ring(size_t capacity, size_t chunk_events)
      : chunk_count((capacity + chunk_events) / chunk_events),
        slots(chunk_count * chunk_events),
        chunks(new std::atomic<Chunk*>[chunk_count]) {
    for (size_t i = 0; i < chunk_count; ++i) chunks[i].store(nullptr, std::memory_order_relaxed);
  }
  ~Ring() {
    for (size_t i = 0; i < chunk_count; ++i) delete chunks[i].load(std::memory_order_relaxed);
  }

  const size_t chunk_count;
  const size_t slots;
  const std::unique_ptr<std::atomic<Chunk*>[]> chunks;
  std::atomic<uint64_t> head{0};  // events written; the writer's alone to change
  // The chunk its thread writes in, told before the thread looks at its place there, so that a ring
  // taking chunks leaves it alone (see reclaim_oldest_chunk).
  std::atomic<size_t> entered{kNoChunk};
  // Its events before this index went with a chunk another ring took (rings_mutex_).
  uint64_t valid_from = 0;
  // The slot the next event goes to and the end of its chunk; both null before the first event.
  // The writer's alone.
  StoredEvent* cursor = nullptr;
  StoredEvent* chunk_end = nullptr;
  std::atomic<bool> owned{true};  // false once its thread ended
  // When the thread last dropped an event because a reader was copying; the writer's alone.
  std::atomic<uint64_t> last_drop_ticks{0};
  uint64_t last_ticks = 0;  // the newest time stamp the thread wrote or dropped; the writer's alone
  // The coarse clock's reading when the thread last read the events' clock; the writer's alone.
  uint64_t last_coarse_ns = 0;
};

namespace {

// The calling thread's ring and its trace: a plain struct, so that reading it costs one TLS
// lookup and no wrapper call. The object with a destructor below is touched once per thread.
struct ThreadRing {
  uint64_t trace_id;
  EventTrace::Ring* ring;
};
thread_local ThreadRing t_ring{0, nullptr};
// Set once the thread's ring was given back: the thread is ending, and its later events (a
// destructor of another thread-local object that frees memory, the runtime's teardown at exit) are
// dropped, as another thread may write to that ring by now.
thread_local bool t_ring_released = false;

// Gives the thread's ring back for reuse when the thread ends.
struct RingReleaser {
  uint64_t trace_id = 0;
  EventTrace::Ring* ring = nullptr;
  pid_t pid = 0;  // of the process that claimed the ring
  ~RingReleaser() {
    t_ring = {0, nullptr};
    t_ring_released = true;
    // In a child forked since (the forking thread's copy ends with the child), the lock may have
    // been held by another thread of the parent at the fork, for ever; nothing is traced there.
    if (ring == nullptr || pid != getpid()) return;
    LiveTraces& live = live_traces();
    std::lock_guard<std::mutex> lock(live.mutex);
    if (std::find(live.ids.begin(), live.ids.end(), trace_id) != live.ids.end()) {
      ring->owned.store(false, std::memory_order_release);
    }
  }
};
thread_local RingReleaser t_releaser;

uint64_t new_trace_id() {
  LiveTraces& live = live_traces();
  std::lock_guard<std::mutex> lock(live.mutex);
  const uint64_t id = live.next_id++;
  live.ids.push_back(id);
  return id;
}

}  // namespace

const char* event_type_name(EventType type) {
  switch (type) {
    case EventType::kAlloc:
      return "alloc";
    case EventType::kFree:
      return "free";
    case EventType::kSegmentAlloc:
      return "segment_alloc";
    case EventType::kSegmentFree:
      return "segment_free";
    case EventType::kFlush:
      return "flush";
    case EventType::kTrim:
      return "trim";
    case EventType::kOom:
      return "oom";
  }
  return "alloc";
}

EventTrace::EventTrace(size_t capacity)
    : capacity_(capacity),
      id_(new_trace_id()),
      start_(read_with_ticks(CLOCK_MONOTONIC)),
      chunk_events_(std::min(kChunkEvents, capacity + 1)) {}

EventTrace::ClockReading EventTrace::read_with_ticks(clockid_t clock) {
  // Read between two readings of the events' clock, whose middle it is given, and kept from the
  // try whose two readings lie closest: a thread descheduled between two reads put every event's
  // time off by as long (on a loaded machine the events of a report came out after the report).
  ClockReading best{clock_ticks(), monotonic_ns(clock)};
  uint64_t best_gap = UINT64_MAX;
  for (int attempt = 0; attempt < 5; ++attempt) {
    const uint64_t before = clock_ticks();
    const uint64_t ns = monotonic_ns(clock);
    const uint64_t after = clock_ticks();
    if (after >= before && after - before < best_gap) {
      best_gap = after - before;
      best = {before + (after - before) / 2, ns};
    }
  }
  return best;
}

EventTrace::~EventTrace() {
  {
    LiveTraces& live = live_traces();
    std::lock_guard<std::mutex> lock(live.mutex);
    live.ids.erase(std::remove(live.ids.begin(), live.ids.end(), id_), live.ids.end());
  }
  for (Ring* ring : rings_) delete ring;
}

inline EventTrace::Ring* EventTrace::ring_of_this_thread() noexcept {
  const ThreadRing mine = t_ring;
  if (mine.trace_id == id_) return mine.ring;
  return claim_ring();
}

EventTrace::Ring* EventTrace::claim_ring() noexcept {
  if (t_ring_released) return nullptr;
  // This thread's first event (or its first in this trace: the ring of another trace it wrote to
  // stays that trace's).
  try {
    std::lock_guard<std::mutex> lock(rings_mutex_);
    Ring* ring = nullptr;
    for (Ring* candidate : rings_) {
      bool expected = false;
      if (candidate->owned.compare_exchange_strong(expected, true, std::memory_order_acq_rel)) {
        ring = candidate;
        break;
      }
    }
    if (ring == nullptr) {
      support::make_room_for_one_more(rings_);
      ring = new Ring(capacity_, chunk_events_);
      rings_.push_back(ring);
    }
    t_ring = {id_, ring};
    // A ring this thread wrote for an earlier trace stays that trace's.
    t_releaser.trace_id = id_;
    t_releaser.ring = ring;
    t_releaser.pid = getpid();
    return ring;
  } catch (...) {
    return nullptr;  // out of host memory: the event is dropped
  }
}

namespace {

// The stamp of an event whose address's previous event is this thread's own: the events' clock
// once per tick of the kernel's coarse clock, and the thread's last stamp plus one in between. Such
// a stamp still follows all of the thread's earlier events and precedes every event any thread
// records later: it is never ahead of the true time, as no event takes less than a tick of the
// clock. Reading the coarse clock (loads from the vDSO's data page) costs about half of reading the
// counter, whose microcode was the largest part of an event's cost (docs/design.md, "Memory over
// time").
uint64_t ticks_after_own(EventTrace::Ring& ring) {
  const uint64_t coarse = monotonic_ns(CLOCK_MONOTONIC_COARSE);  // 0: the clock failed
  if (coarse != 0 && coarse == ring.last_coarse_ns) return ring.last_ticks + 1;
  ring.last_coarse_ns = coarse;
  return std::max(ring.last_ticks, clock_ticks());
}

// The stamp of an event recorded under the lock that guards `clock`: after every stamp the clock
// gave, and, unless the address's previous event was stamped by the clock too (`after_lock`), read
// from the counter, as record()'s (the previous event may be another thread's, stamped by the
// counter, or lagging by a coarse tick after that thread's own). After the clock's own, the counter
// is read once per tick of the coarse clock, as ticks_after_own does for a thread.
uint64_t ticks_under_lock(EventTrace::Ring& ring, EventTrace::LockClock& clock, bool after_lock) {
  uint64_t ticks = std::max(ring.last_ticks, clock.ticks + 1);
  if (after_lock) {
    const uint64_t coarse = monotonic_ns(CLOCK_MONOTONIC_COARSE);  // 0: the clock failed
    if (coarse == 0 || coarse != clock.coarse_ns) {
      clock.coarse_ns = coarse;
      ticks = std::max(ticks, clock_ticks());
    }
  } else {
    ticks = std::max(ticks, clock_ticks());
  }
  clock.ticks = ticks;
  return ticks;
}

// The index of a ring's oldest event its thread has not overwritten, after `head` events.
uint64_t oldest_not_overwritten(uint64_t head, size_t capacity) {
  return head > capacity ? head - capacity : 0;
}

// A dropped event: a later window starts after it.
void note_drop(EventTrace::Ring& ring) {
  ring.last_ticks = std::max(ring.last_ticks, clock_ticks());
  ring.last_drop_ticks.store(ring.last_ticks, std::memory_order_relaxed);
}

}  // namespace

void EventTrace::record_enabled(EventType type, int device, uint64_t address, uint64_t size,
                                uint64_t stream, int32_t site, Stamp stamp,
                                LockClock* clock) noexcept {
  Ring* ring = ring_of_this_thread();
  if (ring == nullptr) return;
  if (reading_.load(std::memory_order_relaxed)) {
    note_drop(*ring);
    return;
  }
  if (ring->cursor == ring->chunk_end && !enter_next_chunk(*ring)) {
    note_drop(*ring);
    return;
  }
  StoredEvent* event = ring->cursor;
  // Asks for the line of a later event now: the store would otherwise wait for it, and every
  // store after it with it (a prefetch past the chunk's end is harmless).
  __builtin_prefetch(event + kPrefetchEvents, 1);
  const uint64_t head = ring->head.load(std::memory_order_relaxed);
  // Orders the previous publication of `head` before these stores, for a reader that sees them.
  std::atomic_thread_fence(std::memory_order_release);
  // A thread's events never go back in time, even when it moves to a core whose counter lags.
  switch (stamp) {
    case Stamp::kNow:
      ring->last_ticks = std::max(ring->last_ticks, clock_ticks());
      break;
    case Stamp::kAfterOwn:
      ring->last_ticks = ticks_after_own(*ring);
      break;
    case Stamp::kUnderLock:
    case Stamp::kAfterLock:
      ring->last_ticks = ticks_under_lock(*ring, *clock, stamp == Stamp::kAfterLock);
      break;
  }
  event->ticks.store(ring->last_ticks, std::memory_order_relaxed);
  event->address.store(address, std::memory_order_relaxed);
  event->size.store(size, std::memory_order_relaxed);
  event->stream.store(stream, std::memory_order_relaxed);
  event->packed.store(pack(type, device, site), std::memory_order_relaxed);
  ring->cursor = event + 1;
  ring->head.store(head + 1, std::memory_order_release);
}

bool EventTrace::enter_next_chunk(Ring& ring) noexcept {
  const uint64_t head = ring.head.load(std::memory_order_relaxed);
  const size_t slot = head % ring.slots;
  const size_t index = slot / chunk_events_;
  // Told before the place is looked at, both sequentially consistent (as in Dekker's algorithm): a
  // ring taking this chunk meanwhile either sees the thread came for it and puts it back, or took
  // it before and the thread finds the place empty.
  ring.entered.store(index, std::memory_order_seq_cst);
  Chunk* chunk = ring.chunks[index].load(std::memory_order_seq_cst);
  if (chunk == nullptr) {
    Chunk* taken = take_chunk(ring.chunks[index]);
    if (taken == nullptr) {
      // None (a reader copies, or host memory ran out), or the ring that took this ring's chunk
      // here put it back.
      chunk = ring.chunks[index].load(std::memory_order_acquire);
      if (chunk == nullptr) return false;
    } else if (ring.chunks[index].compare_exchange_strong(chunk, taken,
                                                          std::memory_order_acq_rel)) {
      chunk = taken;
    } else {  // put back meanwhile: `chunk`
      delete taken;
      chunks_made_.fetch_sub(1, std::memory_order_relaxed);
    }
  }
  chunk->first_index.store(head - slot % chunk_events_, std::memory_order_relaxed);
  ring.cursor = chunk->stored.get() + slot % chunk_events_;
  ring.chunk_end = chunk->stored.get() + chunk_events_;
  return true;
}

EventTrace::Chunk* EventTrace::take_chunk(const std::atomic<Chunk*>& place) noexcept {
  // Never waits for a reader, which copies for milliseconds: while one does, the event is dropped,
  // as every event is then. (A reader marks that it reads while it holds the lock.)
  while (!rings_mutex_.try_lock()) {
    if (reading_.load(std::memory_order_relaxed)) return nullptr;
    std::this_thread::yield();
  }
  std::lock_guard<std::mutex> lock(rings_mutex_, std::adopt_lock);
  // A ring that took the chunk there put it back while this thread waited: taking another would
  // throw its events away for nothing.
  if (place.load(std::memory_order_acquire) != nullptr) return nullptr;
  // One full ring, and two chunks per ring: enough for the newest `capacity` events of all rings
  // however the threads take turns (each ring's oldest chunk and the one it writes may hold older
  // events), while the oldest chunk of all is the one taken.
  const size_t budget = rings_.front()->chunk_count + 2 * rings_.size();
  // A chunk put back to a ring whose thread came for it is no reason to exceed the budget: choose
  // again (that ring's place is now the one its thread writes, which the next choice skips).
  for (int tries = 0; tries < 8 && chunks_made_.load(std::memory_order_relaxed) >= budget;
       ++tries) {
    bool put_back = false;
    if (Chunk* chunk = reclaim_oldest_chunk(put_back)) return chunk;
    if (!put_back) break;
  }
  try {
    Chunk* chunk = new Chunk(chunk_events_);
    chunks_made_.fetch_add(1, std::memory_order_relaxed);
    return chunk;
  } catch (...) {
    return nullptr;  // out of host memory
  }
}

EventTrace::Chunk* EventTrace::reclaim_oldest_chunk(bool& put_back) noexcept {
  // Each ring's oldest chunk is the one of its first valid event; a ring's events grow older from
  // its chunk's last, so the chunk whose last event is the oldest holds the oldest events of all.
  Ring* oldest = nullptr;
  size_t oldest_index = 0;
  uint64_t oldest_first = 0;  // the index its chunk's first event had when chosen
  uint64_t oldest_ticks = UINT64_MAX;
  for (Ring* ring : rings_) {
    const uint64_t head = ring->head.load(std::memory_order_acquire);
    const uint64_t first = std::max(ring->valid_from, oldest_not_overwritten(head, capacity_));
    if (first >= head) continue;
    uint64_t start = first - (first % ring->slots) % chunk_events_;  // of the chunk holding it
    size_t index = (start % ring->slots) / chunk_events_;
    const size_t entered = ring->entered.load(std::memory_order_acquire);
    if (entered == index) {
      // Its thread writes there, over the oldest events of a ring gone round: the chunk after it
      // holds the oldest of the others (taking it takes those before it too).
      start += chunk_events_;
      index = (start % ring->slots) / chunk_events_;
      if (start >= head || entered == index) continue;
    }
    const Chunk* chunk = ring->chunks[index].load(std::memory_order_acquire);
    if (chunk == nullptr) continue;
    const uint64_t ticks = chunk->stored[chunk_events_ - 1].ticks.load(std::memory_order_relaxed);
    if (ticks < oldest_ticks) {
      oldest = ring;
      oldest_index = index;
      oldest_ticks = ticks;
      oldest_first = start;
    }
  }
  if (oldest == nullptr) return nullptr;
  std::atomic<Chunk*>& place = oldest->chunks[oldest_index];
  Chunk* chunk = place.exchange(nullptr, std::memory_order_seq_cst);
  if (chunk == nullptr) return nullptr;
  // Also put back when its thread wrote it again since it was chosen (the chooser was descheduled
  // meanwhile): it then holds that ring's newest events, not the oldest of all.
  if (oldest->entered.load(std::memory_order_seq_cst) == oldest_index ||
      chunk->first_index.load(std::memory_order_relaxed) != oldest_first) {
    // Its thread came back to it meanwhile (a whole lap of the ring). If it found the place empty
    // it put a chunk of its own there, and this one is free; else it writes into this one.
    Chunk* empty = nullptr;
    if (place.compare_exchange_strong(empty, chunk, std::memory_order_acq_rel)) {
      put_back = true;
      return nullptr;
    }
  }
  // Its thread left it full, and only comes back through an empty place. The ring's events up to
  // its last are gone, and every window starts after them.
  oldest->valid_from = std::max(oldest->valid_from,
                                chunk->first_index.load(std::memory_order_relaxed) + chunk_events_);
  reclaimed_ticks_ = std::max(
      reclaimed_ticks_, chunk->stored[chunk_events_ - 1].ticks.load(std::memory_order_relaxed));
  return chunk;
}

namespace {

// An event as a reader copied it: its time stamp, and its ring and index there.
struct Copied {
  uint64_t ticks;
  size_t ring;
  uint64_t index;
  TraceEvent event;
};

// The order of the window: by time, then by thread and order within it.
bool copied_before(const Copied& a, const Copied& b) {
  if (a.ticks != b.ticks) return a.ticks < b.ticks;
  if (a.ring != b.ring) return a.ring < b.ring;
  return a.index < b.index;
}

// Keeps the newest `count` of `copied`, in no particular order.
void keep_newest(std::vector<Copied>& copied, size_t count) {
  if (copied.size() <= count) return;
  const auto first_kept = copied.end() - static_cast<std::ptrdiff_t>(count);
  std::nth_element(copied.begin(), first_kept, copied.end(), copied_before);
  copied.erase(copied.begin(), first_kept);
}

}  // namespace

TraceWindow EventTrace::read() const {
  TraceWindow window;
  window.capacity = capacity_;
  if (capacity_ == 0) return window;
  std::vector<Copied> copied;
  {
    std::lock_guard<std::mutex> lock(rings_mutex_);
    // Every drop so far came before this read, and its window starts after them: a thread that
    // drops again while this reader copies keeps only that later time (helper-103's drophole.cc:
    // the second of two reads missed 76,927 events after the first's drops).
    uint64_t earlier_drops = 0;
    for (const Ring* ring : rings_) {
      earlier_drops =
          std::max(earlier_drops, ring->last_drop_ticks.load(std::memory_order_relaxed));
    }
    reading_.store(true, std::memory_order_seq_cst);
    // Cleared however the copy ends (a copy that runs out of memory throws): set, it drops events.
    struct ClearOnExit {
      std::atomic<bool>& flag;
      ~ClearOnExit() { flag.store(false, std::memory_order_release); }
    } clear_reading{reading_};
    // Events stamped after this were not all published when their rings were read.
    const uint64_t cut = clock_ticks();
    // The newest time before which events are missing: at least those dropped before and those
    // that went with chunks.
    uint64_t window_start = std::max(earlier_drops, reclaimed_ticks_);
    for (size_t r = 0; r < rings_.size(); ++r) {
      const Ring& ring = *rings_[r];
      const uint64_t first_head = ring.head.load(std::memory_order_acquire);
      window.recorded += first_head;
      const uint64_t overwritten = oldest_not_overwritten(first_head, capacity_);
      const uint64_t begin = std::max(overwritten, ring.valid_from);
      const size_t start = copied.size();
      // Oldest first, checking after each block that the thread has not overwritten it meanwhile
      // (it overwrites the oldest first): a reader as fast as the writer loses nothing.
      // Events before valid_from went with chunks: reclaimed_ticks_ covers them already.
      uint64_t lost_before = ring.valid_from >= overwritten ? 0 : overwritten;
      for (uint64_t block = begin; block < first_head; block += kCheckedBlock) {
        const uint64_t block_end = std::min(first_head, block + kCheckedBlock);
        for (uint64_t i = block; i < block_end; ++i) {
          const size_t slot = static_cast<size_t>(i % ring.slots);
          const Chunk* chunk = ring.chunks[slot / chunk_events_].load(std::memory_order_acquire);
          if (chunk == nullptr) {  // never while valid_from holds: then the window starts later
            lost_before = std::max(lost_before, i + 1);
            continue;
          }
          const StoredEvent& stored = chunk->stored[slot % chunk_events_];
          const uint64_t packed = stored.packed.load(std::memory_order_relaxed);
          TraceEvent event{};
          event.type = static_cast<EventType>(packed & 0xff);
          event.device = static_cast<int>((packed >> 8) & 0xffff) - 1;
          event.site = static_cast<int32_t>(static_cast<uint32_t>(packed >> 32));
          event.address = stored.address.load(std::memory_order_relaxed);
          event.size = stored.size.load(std::memory_order_relaxed);
          event.stream = stored.stream.load(std::memory_order_relaxed);
          copied.push_back({stored.ticks.load(std::memory_order_relaxed), r, i, event});
        }
        std::atomic_thread_fence(std::memory_order_acquire);
        // Slots of events older than `head - capacity` may have been rewritten while copied.
        const uint64_t head = ring.head.load(std::memory_order_relaxed);
        const uint64_t valid = oldest_not_overwritten(head, capacity_);
        if (valid > begin) lost_before = std::max(lost_before, std::min(valid, block_end));
      }
      // Events of this ring older than its oldest copied one are gone: the window starts there
      // (at the cut, when the thread overwrote everything up to it while it was copied).
      if (lost_before > 0) {
        uint64_t oldest = cut;
        for (size_t c = start; c < copied.size(); ++c) {
          if (copied[c].index >= lost_before) oldest = std::min(oldest, copied[c].ticks);
        }
        window_start = std::max(window_start, oldest);
      }
      // Events after `cut` may lack others published late, and those before a gap are left out.
      size_t kept = start;
      for (size_t c = start; c < copied.size(); ++c) {
        if (copied[c].index >= lost_before && copied[c].ticks <= cut) copied[kept++] = copied[c];
      }
      copied.resize(kept);
      // Only the newest `capacity` can be in the window (the filters below drop the oldest
      // first): a copy of every ring whole held one ring's worth per thread that ever recorded.
      keep_newest(copied, capacity_);
    }
    // A thread dropped an event then, while an earlier reader copied or (up to the cut) this one;
    // later drops are the next reader's to see.
    for (const Ring* ring : rings_) {
      const uint64_t dropped = ring->last_drop_ticks.load(std::memory_order_relaxed);
      if (dropped <= cut) window_start = std::max(window_start, dropped);
    }
    reading_.store(false, std::memory_order_release);
    copied.erase(std::remove_if(copied.begin(), copied.end(),
                                [&](const Copied& c) { return c.ticks < window_start; }),
                 copied.end());
  }
  std::sort(copied.begin(), copied.end(), copied_before);
  // An address's allocations and frees alternate. Two in a row prove an event between them
  // missing (seen during allocation storms on a loaded VM, cause not pinned down: a clock that
  // differs between cores would do it), so the window starts after the earlier of the two.
  std::unordered_map<uint64_t, std::pair<EventType, size_t>> last_of_address;
  size_t first_kept = 0;
  for (size_t i = 0; i < copied.size(); ++i) {
    const TraceEvent& event = copied[i].event;
    if (event.type != EventType::kAlloc && event.type != EventType::kFree) continue;
    const auto [it, first] = last_of_address.try_emplace(event.address, event.type, i);
    if (first) continue;
    if (it->second.first == event.type) first_kept = std::max(first_kept, it->second.second + 1);
    it->second = {event.type, i};
  }
  copied.erase(copied.begin(), copied.begin() + static_cast<std::ptrdiff_t>(first_kept));

  // The clock's rate, measured over the trace's life (at least 10 ms of it).
  ClockReading now = read_with_ticks(CLOCK_MONOTONIC);
  if (now.ns - start_.ns < 10000000) {
    std::this_thread::sleep_for(std::chrono::nanoseconds(10000000 - (now.ns - start_.ns)));
    now = read_with_ticks(CLOCK_MONOTONIC);
  }
  const double ticks_per_second = static_cast<double>(now.ticks - start_.ticks) /
                                  (static_cast<double>(now.ns - start_.ns) * 1e-9);
  const ClockReading wall = read_with_ticks(CLOCK_REALTIME);
  const double wall_seconds =
      static_cast<double>(wall.ns / 1000000000) + static_cast<double>(wall.ns % 1000000000) * 1e-9;
  window.events.reserve(copied.size());
  for (Copied& c : copied) {
    // Signed: an event may have been stamped after the wall clock's reading's middle.
    const double ticks_before = static_cast<double>(static_cast<int64_t>(wall.ticks - c.ticks));
    c.event.time = wall_seconds - ticks_before / ticks_per_second;
    window.events.push_back(c.event);
  }
  return window;
}

size_t EventTrace::memory_bytes() const {
  std::lock_guard<std::mutex> lock(rings_mutex_);
  size_t bytes = 0;
  for (const Ring* ring : rings_) {
    bytes += sizeof(Ring) + ring->chunk_count * sizeof(std::atomic<Chunk*>);
    for (size_t i = 0; i < ring->chunk_count; ++i) {
      if (ring->chunks[i].load(std::memory_order_acquire) != nullptr) {
        bytes += sizeof(Chunk) + chunk_events_ * sizeof(StoredEvent);
      }
    }
  }
  return bytes;
}

}  // namespace vramshim::attribution
