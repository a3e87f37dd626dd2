// Stack capture: depth, both unwinders, skipping the shim's own frames, and libunwind kept out of
// the process's global symbol scope.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <thread>
#include <vector>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "tests/unit/attribution/allocation_scenarios.h"
#include "tests/unit/attribution/jit_frame.h"

namespace vramshim::attribution {
namespace {

struct CaptureRequest {
  const StackCapture* capture;
  std::vector<uint64_t> frames;
};

void capture_here(void* argument) {
  auto* request = static_cast<CaptureRequest*>(argument);
  StackCapture::Buffer buffer;
  const StackCapture::Frames captured = request->capture->capture(buffer);
  request->frames.assign(captured.frames, captured.frames + captured.depth);
}

// Captures at the bottom of `recursion` scenario_recurse frames.
std::vector<uint64_t> capture_under_recursion(const StackCapture& capture, int recursion) {
  CaptureRequest request{&capture, {}};
  scenario_recurse(recursion, capture_here, &request);
  return request.frames;
}

std::string function_at(uint64_t return_address) {
  Dl_info info{};
  if (dladdr(reinterpret_cast<void*>(return_address - 1), &info) == 0 ||
      info.dli_sname == nullptr) {
    return "";
  }
  return info.dli_sname;
}

TEST(StackCapture, LibunwindIsPreferredWhenInstalled) {
  EXPECT_EQ(preferred_unwinder(), Unwinder::kLibunwind);
}

TEST(StackCapture, LibunwindStaysOutOfTheGlobalSymbolScope) {
  ASSERT_EQ(preferred_unwinder(), Unwinder::kLibunwind);  // libunwind is loaded by now
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "unw_backtrace"), nullptr);
  EXPECT_EQ(dlsym(RTLD_DEFAULT, "_ULx86_64_step"), nullptr);
}

class StackCaptureBoth : public ::testing::TestWithParam<Unwinder> {};

TEST_P(StackCaptureBoth, DropsOwnModuleFramesAndStartsAtTheApplication) {
  const StackCapture capture(64, GetParam(), ModuleRange::of_this_module());
  const std::vector<uint64_t> frames = capture_under_recursion(capture, 10);
  ASSERT_GE(frames.size(), 10u);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(function_at(frames[i]), "scenario_recurse") << i;
  // Past the recursion the stack goes back through this binary (the test body) to libc.
  EXPECT_TRUE(ModuleRange::of_this_module().contains(frames[10]));
}

TEST_P(StackCaptureBoth, KeepsAtMostTheConfiguredDepth) {
  for (int depth : {1, 20, 40, 64}) {
    const StackCapture capture(depth, GetParam(), ModuleRange::of_this_module());
    const std::vector<uint64_t> frames = capture_under_recursion(capture, 100);
    ASSERT_EQ(frames.size(), static_cast<size_t>(depth));
    EXPECT_EQ(function_at(frames.back()), "scenario_recurse");
  }
}

// A stack with frames past the depth is cut; one whose every frame was kept is not.
struct CutRequest {
  const StackCapture* capture;
  bool cut;
  int depth;
};

void capture_cut_here(void* argument) {
  auto* request = static_cast<CutRequest*>(argument);
  StackCapture::Buffer buffer;
  const StackCapture::Frames captured = request->capture->capture(buffer);
  request->cut = captured.cut;
  request->depth = captured.depth;
}

TEST_P(StackCaptureBoth, SaysWhetherTheDepthCutTheStack) {
  const StackCapture capture(40, GetParam(), ModuleRange::of_this_module());
  CutRequest deep{&capture, false, 0};
  CutRequest shallow{&capture, true, 0};
  std::thread([&] {
    scenario_recurse(60, capture_cut_here, &deep);
    scenario_recurse(5, capture_cut_here, &shallow);
  }).join();
  EXPECT_TRUE(deep.cut);
  EXPECT_EQ(deep.depth, 40);
  EXPECT_FALSE(shallow.cut);
  EXPECT_LT(shallow.depth, 40);
}

// A stack unwound to its base (a thread's start in the C library) within the depth is whole; one
// cut by the depth is not.
struct WholeRequest {
  const StackCapture* capture;
  bool whole;
};

void capture_whole_here(void* argument) {
  auto* request = static_cast<WholeRequest*>(argument);
  StackCapture::Buffer buffer;
  request->whole = request->capture->capture(buffer).whole;
}

TEST_P(StackCaptureBoth, AStackUnwoundToItsBaseWithinTheDepthIsWhole) {
  const StackCapture deep_enough(64, GetParam(), ModuleRange::of_this_module());
  const StackCapture shallow(5, GetParam(), ModuleRange::of_this_module());
  WholeRequest whole{&deep_enough, false};
  WholeRequest cut{&shallow, true};
  std::thread([&] {
    scenario_recurse(10, capture_whole_here, &whole);
    scenario_recurse(10, capture_whole_here, &cut);
  }).join();
  EXPECT_TRUE(whole.whole);
  EXPECT_FALSE(cut.whole);
}

// An unwinder stops at a frame it has no unwind information for (JIT code, a perf trampoline),
// short of the stack's base: such a stack is not whole. libgcc's does; here the frame is a
// trampoline written into an anonymous page, as a JIT would.
TEST(StackCapture, AStackCutAtCodeWithoutUnwindInformationIsNotWhole) {
  const StackCapture capture(64, Unwinder::kLibgcc, ModuleRange::of_this_module());
  WholeRequest through_jit{&capture, true};
  ASSERT_TRUE(testing::call_from_jit_frame(capture_whole_here, &through_jit));
  EXPECT_FALSE(through_jit.whole);
}

INSTANTIATE_TEST_SUITE_P(BothUnwinders, StackCaptureBoth,
                         ::testing::Values(Unwinder::kLibunwind, Unwinder::kLibgcc));

TEST(StackCapture, BothUnwindersReportTheSameReturnAddresses) {
  const StackCapture libunwind(64, Unwinder::kLibunwind, ModuleRange::of_this_module());
  const StackCapture libgcc(64, Unwinder::kLibgcc, ModuleRange::of_this_module());
  const std::vector<uint64_t> a = capture_under_recursion(libunwind, 12);
  const std::vector<uint64_t> b = capture_under_recursion(libgcc, 12);
  ASSERT_GE(a.size(), 12u);
  ASSERT_GE(b.size(), 12u);
  for (int i = 0; i < 12; ++i) EXPECT_EQ(a[i], b[i]) << i;
}

TEST(StackCapture, DepthIsClamped) {
  EXPECT_EQ(StackCapture(0, Unwinder::kLibgcc, {}).depth(), 1);
  EXPECT_EQ(StackCapture(100000, Unwinder::kLibgcc, {}).depth(), StackCapture::kMaxDepth);
}

TEST(ModuleRange, FindsTheObjectMappingAnAddress) {
  const ModuleRange self = ModuleRange::of_this_module();
  EXPECT_TRUE(self.contains(reinterpret_cast<uintptr_t>(&capture_here)));
  const ModuleRange scenarios = ModuleRange::containing(reinterpret_cast<void*>(&scenario_recurse));
  EXPECT_TRUE(scenarios.contains(reinterpret_cast<uintptr_t>(&scenario_recurse)));
  EXPECT_FALSE(scenarios.contains(reinterpret_cast<uintptr_t>(&capture_here)));
  EXPECT_FALSE(self.contains(reinterpret_cast<uintptr_t>(&scenario_recurse)));
  const ModuleRange nothing = ModuleRange::containing(reinterpret_cast<void*>(16));
  EXPECT_EQ(nothing.begin, nothing.end);
}

TEST(ModuleRange, CountsOnlyLeadingFramesInsideTheModule) {
  const ModuleRange shim{0x1000, 0x2000};
  const uint64_t frames[] = {0x1100, 0x1fff, 0x3000, 0x1500, 0x500};
  EXPECT_EQ(count_leading_frames_in(frames, 5, shim), 2);
  EXPECT_EQ(count_leading_frames_in(frames + 2, 3, shim), 0);
  EXPECT_EQ(count_leading_frames_in(frames, 2, shim), 2);
  EXPECT_EQ(count_leading_frames_in(frames, 0, shim), 0);
}

}  // namespace
}  // namespace vramshim::attribution
