#include "shim/python/hybrid_stack.h"

#include <gtest/gtest.h>

#include <vector>

#include "shim/python/python_frame_tag.h"

namespace vramshim::python {
namespace {

// The eval loop spans (0x5000, 0x6000]; other addresses are ordinary native frames.
const EvalFrameRange kEval{0x5000, 0x6000};
const uint64_t kEvalA = 0x5100;
const uint64_t kEvalB = 0x5200;

std::vector<uint64_t> merge(const std::vector<uint64_t>& native,
                            const std::vector<uint64_t>& python, const std::vector<bool>& ends,
                            int max = 64) {
  bool ends_array[64];
  for (size_t i = 0; i < ends.size(); ++i) ends_array[i] = ends[i];
  std::vector<uint64_t> out(max);
  const int count = merge_hybrid_stack(native.data(), static_cast<int>(native.size()),
                                       {python.data(), ends_array, static_cast<int>(python.size())},
                                       kEval, out.data(), max)
                        .frames;
  out.resize(count);
  return out;
}

const uint64_t p0 = tag_python_frame(0), p1 = tag_python_frame(1), p2 = tag_python_frame(2),
               p3 = tag_python_frame(3);

TEST(HybridStackTest, EachEvalCallIsReplacedByTheFramesItRan) {
  // Innermost eval call ran p0 and p1 (p1 its entry frame); the outer one ran p2 and p3.
  EXPECT_EQ(merge({0x100, 0x200, kEvalA, 0x300, kEvalB, 0x400}, {p0, p1, p2, p3},
                  {false, true, false, true}),
            (std::vector<uint64_t>{0x100, 0x200, p0, p1, 0x300, p2, p3, 0x400}));
}

TEST(HybridStackTest, OnePythonFramePerEvalCallAsIn310) {
  EXPECT_EQ(merge({0x100, kEvalA, 0x300, kEvalB, 0x400}, {p0, p1}, {true, true}),
            (std::vector<uint64_t>{0x100, p0, 0x300, p1, 0x400}));
}

TEST(HybridStackTest, EvalFramesWithoutPythonFramesStayNative) {
  EXPECT_EQ(merge({0x100, kEvalA, kEvalB, 0x400}, {p0}, {true}),
            (std::vector<uint64_t>{0x100, p0, kEvalB, 0x400}));
  EXPECT_EQ(merge({0x100, kEvalA}, {}, {}), (std::vector<uint64_t>{0x100, kEvalA}));
}

TEST(HybridStackTest, PythonFramesWithoutAnEvalFrameFollowTheNativeOnes) {
  // The native stack was cut before the outer eval call, or the eval loop's extent is unknown.
  EXPECT_EQ(merge({0x100, kEvalA}, {p0, p1, p2}, {true, true, true}),
            (std::vector<uint64_t>{0x100, p0, p1, p2}));
  EXPECT_EQ(merge({0x100, 0x200}, {p0, p1}, {false, true}),
            (std::vector<uint64_t>{0x100, 0x200, p0, p1}));
}

TEST(HybridStackTest, NeverWritesMoreThanMax) {
  EXPECT_EQ(merge({0x100, kEvalA, 0x300}, {p0, p1, p2}, {false, false, true}, 3),
            (std::vector<uint64_t>{p0, p1, p2}));
  EXPECT_EQ(merge({0x100}, {p0, p1, p2}, {false, false, true}, 2), (std::vector<uint64_t>{p0, p1}));
  EXPECT_TRUE(merge({0x100}, {p0}, {true}, 0).empty());
}

// A call through ctypes 70 native levels deep: the capture kept the innermost 64 native frames,
// none of the eval loop's. The Python frames name the user's code, so the outermost native frames
// make room for them.
TEST(HybridStackTest, PythonFramesTakeTheRoomOfTheOutermostNativeFrames) {
  std::vector<uint64_t> native;
  for (uint64_t i = 0; i < 64; ++i) native.push_back(0x1000 + i);
  std::vector<uint64_t> expected(native.begin(), native.begin() + 62);
  expected.push_back(p0);
  expected.push_back(p1);
  EXPECT_EQ(merge(native, {p0, p1}, {false, true}, 64), expected);
  // Matched Python frames keep their places; the native frames between them give way too.
  EXPECT_EQ(merge({0x100, 0x200, kEvalA, 0x300, kEvalB, 0x400}, {p0, p1, p2, p3},
                  {false, true, false, true}, 6),
            (std::vector<uint64_t>{0x100, 0x200, p0, p1, p2, p3}));
}

// Whether Python frames were left out: past `max`, or past the walk (`deeper`); native frames that
// give way to them do not count.
MergedStack merged(const std::vector<uint64_t>& native, int python_count, bool deeper, int max) {
  const uint64_t python[] = {p0, p1, p2, p3};
  const bool ends[] = {false, false, false, true};
  std::vector<uint64_t> out(max);
  return merge_hybrid_stack(native.data(), static_cast<int>(native.size()),
                            {python, ends, python_count, deeper}, kEval, out.data(), max);
}

TEST(HybridStackTest, SaysWhetherPythonFramesWereLeftOut) {
  EXPECT_FALSE(merged({0x100, 0x200, 0x300}, 2, false, 3).python_left_out);
  EXPECT_EQ(merged({0x100, 0x200, 0x300}, 2, false, 3).python_frames, 2);
  EXPECT_TRUE(merged({0x100}, 4, false, 3).python_left_out);
  EXPECT_EQ(merged({0x100}, 4, false, 3).python_frames, 3);
  EXPECT_TRUE(merged({0x100}, 2, true, 8).python_left_out);
  EXPECT_FALSE(merged({0x100}, 0, false, 8).python_left_out);
}

TEST(PythonFrameTagTest, TaggedFramesAreNeverReturnAddresses) {
  EXPECT_TRUE(is_python_frame(tag_python_frame(7)));
  EXPECT_EQ(python_frame_id(tag_python_frame(7)), 7u);
  EXPECT_FALSE(is_python_frame(0x7fffffffffffULL));
}

}  // namespace
}  // namespace vramshim::python
