#include "shim/pool/capture_state.h"

namespace vramshim::pool {
namespace {

class SpinLock {
 public:
  explicit SpinLock(std::atomic<bool>& flag) : flag_(flag) {
    while (flag_.exchange(true, std::memory_order_acquire)) std::this_thread::yield();
  }
  ~SpinLock() { flag_.store(false, std::memory_order_release); }
  SpinLock(const SpinLock&) = delete;
  SpinLock& operator=(const SpinLock&) = delete;

 private:
  std::atomic<bool>& flag_;
};

}  // namespace

void CaptureState::remember(CUstream stream, CUcontext context) {
  SpinLock lock(records_lock_);
  if (recorded_ < kMaxRecords) records_[recorded_++] = {stream, context};
}

int CaptureState::forget(Record record, Match match, bool all) {
  SpinLock lock(records_lock_);
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
