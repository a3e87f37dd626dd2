#include "shim/pool/stream_set.h"

#include <gtest/gtest.h>

namespace vramshim::pool {
namespace {

CUstream stream(uintptr_t id) { return reinterpret_cast<CUstream>(id); }

TEST(StreamSet, BlockingStreamsAreOrderedByTheLegacyStream) {
  StreamSet streams;
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
  streams.add(stream(0x100), CU_STREAM_DEFAULT);
  streams.add(stream(0x200), CU_STREAM_DEFAULT);
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
  EXPECT_TRUE(streams.non_blocking().empty());
}

TEST(StreamSet, ANonBlockingStreamNeedsEventFences) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  EXPECT_EQ(streams.mode(false), ReuseMode::kEventFence);
  EXPECT_EQ(streams.non_blocking().size(), 1u);
  streams.remove(stream(0x100));
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
}

TEST(StreamSet, DrainingStreamsNeedEventFences) {
  StreamSet streams;
  EXPECT_EQ(streams.mode(true), ReuseMode::kEventFence);
}

TEST(StreamSet, AReusedHandleTakesItsNewFlags) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  streams.add(stream(0x100), CU_STREAM_DEFAULT);
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
}

TEST(StreamSet, AnUnfenceableStreamNeedsAContextSynchronize) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  streams.mark_unfenceable_stream_seen();
  EXPECT_EQ(streams.mode(false), ReuseMode::kContextSynchronize);
  streams.clear();
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
}

TEST(StreamSet, AnotherContextOfTheDeviceNeedsASynchronizeUntilItLeaves) {
  StreamSet streams;
  streams.add(stream(0x100), CU_STREAM_NON_BLOCKING);
  streams.set_other_contexts({reinterpret_cast<CUcontext>(0x77)});
  EXPECT_EQ(streams.mode(false), ReuseMode::kContextSynchronize);
  streams.set_other_contexts({});
  EXPECT_EQ(streams.mode(false), ReuseMode::kEventFence);
}

TEST(StreamSet, SpecialHandlesAreNotStreamsToTrack) {
  StreamSet streams;
  streams.add(nullptr, CU_STREAM_NON_BLOCKING);
  streams.add(CU_STREAM_LEGACY, CU_STREAM_NON_BLOCKING);
  streams.add(CU_STREAM_PER_THREAD, CU_STREAM_NON_BLOCKING);
  EXPECT_TRUE(streams.non_blocking().empty());
  EXPECT_EQ(streams.mode(false), ReuseMode::kLegacyOrdered);
}

}  // namespace
}  // namespace vramshim::pool
