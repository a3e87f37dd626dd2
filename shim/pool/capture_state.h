// Whether a stream capture runs anywhere in the process, so that pools make no call that would
// invalidate it.
#pragma once

#include <atomic>

namespace vramshim::pool {

// Whether a stream capture is running somewhere in the process. The hooks count captures begun and
// ended (cuStreamBeginCapture / cuStreamEndCapture and their variants); pools read it.
//
// While it is active a pool makes no call that could invalidate or join a capture: it records no
// fence events (a fence records on every live stream, the capturing one included, and on the legacy
// stream, which a global-mode capture forbids), queries or synchronizes nothing, and frees nothing
// to the driver. It still serves allocations from blocks that are already ready, and a request the
// cache cannot serve goes to the driver's allocate, as the caller's own call would have. The hooks
// should count captures of every mode, since fence events would be recorded into any capturing
// stream.
class CaptureState {
 public:
  void on_capture_begin() { active_captures_.fetch_add(1, std::memory_order_acq_rel); }
  void on_capture_end() {
    int current = active_captures_.load(std::memory_order_acquire);
    while (current > 0 && !active_captures_.compare_exchange_weak(current, current - 1,
                                                                  std::memory_order_acq_rel)) {
    }
  }
  bool active() const { return active_captures_.load(std::memory_order_acquire) > 0; }
  void reset() { active_captures_.store(0, std::memory_order_release); }

 private:
  std::atomic<int> active_captures_{0};
};

}  // namespace vramshim::pool
