// Stack capture: depth, both unwinders, skipping the shim's own frames, and libunwind kept out of
// the process's global symbol scope.
#include <dlfcn.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "tests/unit/attribution/allocation_scenarios.h"

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
