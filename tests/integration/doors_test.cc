// The shim sees every allocation call through every door, forwards it to the matching real
// function, exports nothing but its hooks, and leaves programs that do not use CUDA as they were.
#include <gtest/gtest.h>

#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

// Door tests count driver calls one for one, so the pool must not absorb them.
RunOptions counting() {
  RunOptions options;
  options.env = {{"VRAMSHIM_LOG", "debug"}, {"VRAMSHIM_POOL", "off"}};
  return options;
}

TEST(Doors, LinkedProgramCallsReachTheDriverThroughTheHooks) {
  const ProgramRun run = run_program({program("linked_door")}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(shim_calls(run.err)["cuMemAlloc_v2"], 3u);
  EXPECT_EQ(shim_calls(run.err)["cuMemFree_v2"], 3u);
  EXPECT_EQ(fake_calls(run.out)["cuMemAlloc_v2"], 3u);
  EXPECT_EQ(fake_calls(run.out)["cuMemFree_v2"], 3u);
}

TEST(Doors, DlsymOnTheDriverHandleReturnsHooks) {
  const ProgramRun run = run_program({program("dlsym_door"), "handle"}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(shim_calls(run.err)["cuMemAlloc_v2"], 3u);
  EXPECT_EQ(shim_calls(run.err)["cuMemFree_v2"], 3u);
  EXPECT_EQ(fake_calls(run.out)["cuMemAlloc_v2"], 3u);
}

TEST(Doors, DlsymOnRtldDefaultReturnsHooks) {
  const ProgramRun run = run_program({program("dlsym_door"), "default"}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(shim_calls(run.err)["cuMemAlloc_v2"], 3u);
  EXPECT_EQ(fake_calls(run.out)["cuMemAlloc_v2"], 3u);
}

TEST(Doors, GetProcAddressMapsEachVariantToItsOwnHook) {
  const ProgramRun run = run_program({program("proc_address_door")}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto shim = shim_calls(run.err);
  const auto fake = fake_calls(run.out);
  // The per-thread flag reached the _ptsz functions, through their own hooks.
  for (const char* name :
       {"cuMemAllocAsync", "cuMemAllocAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz"}) {
    EXPECT_EQ(shim.count(name) ? shim.at(name) : 0, 1u) << name;
    EXPECT_EQ(fake.at(name), 1u) << name;
  }
  // "cuMemAlloc" at 3020, asked through v1 and v2 of cuGetProcAddress found by self-lookup.
  EXPECT_EQ(shim.at("cuMemAlloc_v2"), 2u);
  EXPECT_EQ(fake.at("cuMemAlloc_v2"), 2u);
  EXPECT_EQ(shim.at("cuMemFree_v2"), 2u);
  EXPECT_EQ(shim.at("cuGetProcAddress"), 1u);  // the v1 found at 11030, then used once
  EXPECT_EQ(fake.at("cuGetProcAddress"), 1u);
  EXPECT_EQ(shim.at("cuGetProcAddress_v2"), fake.at("cuGetProcAddress_v2"));
}

TEST(Doors, WrapperUsingRtldNextDoesNotRecurse) {
  const ProgramRun run = run_program({program("wrapped_driver")}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err << " signal " << run.term_signal;
  EXPECT_NE(run.out.find("wrapper calls=3"), std::string::npos) << run.out;
  EXPECT_EQ(shim_calls(run.err)["cuMemAlloc_v2"], 3u);
  EXPECT_EQ(fake_calls(run.out)["cuMemAlloc_v2"], 3u);
}

TEST(Doors, EightThreadsThroughAllDoorsAddUp) {
  const ProgramRun run = run_program({program("threads_all_doors")}, counting());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto shim = shim_calls(run.err);
  const auto fake = fake_calls(run.out);
  // Per thread, 250 rounds: 188 through cuMemAlloc_v2's three doors, 62 through cuGetProcAddress.
  EXPECT_EQ(shim.at("cuMemAlloc_v2"), 8u * 188u);
  EXPECT_EQ(shim.at("cuMemFree_v2"), 8u * 188u);
  EXPECT_EQ(shim.at("cuMemAllocAsync"), 4u * 62u);
  EXPECT_EQ(shim.at("cuMemAllocAsync_ptsz"), 4u * 62u);
  for (const char* name : {"cuMemAlloc_v2", "cuMemFree_v2", "cuMemAllocAsync",
                           "cuMemAllocAsync_ptsz", "cuMemFreeAsync", "cuMemFreeAsync_ptsz"}) {
    EXPECT_EQ(shim.at(name), fake.at(name)) << name;
  }
}

TEST(Doors, DisabledShimHandsOutTheDriversOwnFunctions) {
  RunOptions options = counting();
  options.env["VRAMSHIM_DISABLE"] = "1";
  const ProgramRun run = run_program({program("proc_address_door")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const auto shim = shim_calls(run.err);
  EXPECT_EQ(shim.count("cuMemAllocAsync_ptsz"), 0u);
  EXPECT_EQ(shim.count("cuMemAlloc_v2"), 0u);
  EXPECT_EQ(fake_calls(run.out).at("cuMemAllocAsync_ptsz"), 1u);
}

// A dlsym before the C library has set up the environment (a preinit function, as sanitizers'
// interceptors do) must not make the shim read VRAMSHIM_DISABLE as unset.
TEST(Doors, DisabledShimStaysDisabledWhenLookedUpBeforeTheCLibraryStarts) {
  RunOptions options = counting();
  options.env["VRAMSHIM_DISABLE"] = "1";
  const ProgramRun run = run_program({program("preinit_lookup")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(shim_calls(run.err).count("cuMemAlloc_v2"), 0u) << run.err;
  EXPECT_EQ(fake_calls(run.out).at("cuMemAlloc_v2"), 1u);
}

}  // namespace
}  // namespace vramshim::testing
