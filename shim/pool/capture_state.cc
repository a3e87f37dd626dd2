#include "shim/pool/capture_state.h"

#include <cstdint>
#include <mutex>

namespace vramshim::pool {

namespace {

constexpr size_t kNoShard = SIZE_MAX;
// The threads that made a forbidden call so far, in order; each keeps its shard.
std::atomic<size_t> g_threads_seen{0};
thread_local size_t t_call_shard = kNoShard;

}  // namespace

std::atomic<int>& CaptureState::calls_of_this_thread() {
  if (t_call_shard == kNoShard) {
    t_call_shard = g_threads_seen.fetch_add(1, std::memory_order_relaxed) % kCallShards;
  }
  return calls_in_flight_[t_call_shard].calls;
}

void CaptureState::remember(CUstream stream, CUcontext context) {
  const std::lock_guard<support::AdaptiveMutex> lock(records_lock_);
  if (recorded_ < kMaxRecords) records_[recorded_++] = {stream, context};
}

int CaptureState::forget(Record record, Match match, bool all) {
  const std::lock_guard<support::AdaptiveMutex> lock(records_lock_);
  int forgotten = 0;
  for (size_t i = 0; i < recorded_;) {
    const bool same_stream = records_[i].stream == record.stream;
    const bool same_context = records_[i].context == record.context;
    const bool matches = match == kStream    ? same_stream
                         : match == kContext ? same_context
                                             : same_stream && same_context;
    if (!matches) {
      ++i;
      continue;
    }
    records_[i] = records_[--recorded_];
    ++forgotten;
    if (!all) break;
  }
  return forgotten;
}

}  // namespace vramshim::pool
