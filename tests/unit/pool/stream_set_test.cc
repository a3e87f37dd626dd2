#include "shim/pool/stream_set.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

CUstream stream(uintptr_t id) { return reinterpret_cast<CUstream>(id); }

TEST(StreamSet, LegacyAndOneBlockingStreamReuseAtOnce) {
  StreamSet streams;
  EXPECT_EQ(streams.mode(), ReuseMode::kImmediate);
  streams.add(stream(0x100), CU_STREAM_DEFAULT);
  EXPECT_EQ(streams.mode(), ReuseMode::kImmediate);
}

TEST(StreamSet, ANonBlockingStreamNeedsEventFences) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(streams.mode(), ReuseMode::kEventFence);
  streams.remove(stream(0x100));
  EXPECT_EQ(streams.mode(), ReuseMode::kImmediate);
}

TEST(StreamSet, TwoBlockingStreamsNeedEventFences) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_DEFAULT);
  streams.add(stream(0x200), CU_STREAM_DEFAULT);
  EXPECT_EQ(streams.mode(), ReuseMode::kEventFence);
  EXPECT_EQ(streams.streams().size(), 2u);
}

TEST(StreamSet, PerThreadStreamNeedsContextSynchronize) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  streams.mark_per_thread_used();
  EXPECT_EQ(streams.mode(), ReuseMode::kContextSynchronize);
}

TEST(StreamSet, SpecialHandlesAreNotStreamsToTrack) {
  StreamSet streams;
  streams.add(nullptr, CU_STREAM_NON_BLOCKING);
  streams.add(CU_STREAM_LEGACY, CU_STREAM_NON_BLOCKING);
  streams.add(CU_STREAM_PER_THREAD, CU_STREAM_NON_BLOCKING);
  EXPECT_TRUE(streams.streams().empty());
  EXPECT_EQ(streams.mode(), ReuseMode::kImmediate);
}

}  // namespace
}  // namespace vramshim::pool
