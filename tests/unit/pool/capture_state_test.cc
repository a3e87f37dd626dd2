// What the capture probe's kept answers rely on (shim/runtime/capture_probe): CaptureState's
// changes move whenever what the driver allows threads may have changed.
#include "shim/pool/capture_state.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

// A thread asking the driver while a begin is under way (counted, not yet made) is told the
// calls are allowed; the count it read must not stay current once the driver has begun.
TEST(CaptureState, ChangesMoveOnceTheDriverAnsweredABegin) {
  CaptureState capture;
  capture.on_capture_begin(nullptr, nullptr);
  const uint64_t while_beginning = capture.changes();
  capture.after_capture_begin();
  EXPECT_NE(capture.changes(), while_beginning);
  EXPECT_TRUE(capture.active());
}

TEST(CaptureState, ChangesMoveWhenACaptureEndsOrGoesWithItsStream) {
  CaptureState capture;
  const CUstream stream = reinterpret_cast<CUstream>(0x10);
  capture.on_capture_begin(stream, nullptr);
  capture.after_capture_begin();
  uint64_t before = capture.changes();
  capture.on_capture_end(stream, nullptr);
  EXPECT_NE(capture.changes(), before);
  capture.on_capture_begin(stream, nullptr);
  capture.after_capture_begin();
  before = capture.changes();
  EXPECT_EQ(capture.on_stream_gone(stream), 1);
  EXPECT_NE(capture.changes(), before);
  EXPECT_FALSE(capture.active());
}

}  // namespace
}  // namespace vramshim::pool
