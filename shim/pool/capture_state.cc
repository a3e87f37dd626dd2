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

int CaptureState::forget(CUstream stream, CUcontext context, bool all) {
  SpinLock lock(records_lock_);
  int forgotten = 0;
  for (size_t i = 0; i < recorded_;) {
    const bool match =
        context != nullptr ? records_[i].context == context : records_[i].stream == stream;
    if (!match) {
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
