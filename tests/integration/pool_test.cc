// Through the hooks against the simulated driver: the pool absorbs driver calls, never
// reuses memory that queued work still writes, survives out-of-memory, honours the limit, keeps
// captures valid, and cleans up on context teardown and fork.
#include <cuda.h>
#include <gtest/gtest.h>

#include <regex>

#include "tests/integration/report_reading.h"
#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

// The number after "key=" in a program's output, or -1.
long long figure(const std::string& out, const std::string& key) {
  std::smatch match;
  if (!std::regex_search(out, match, std::regex("(^|\\s)" + key + "=(-?[0-9]+)"))) return -1;
  return std::stoll(match[2].str());
}

RunOptions quiet() {
  RunOptions options;
  options.env = {{"VRAMSHIM_REPORT", "off"}, {"VRAMSHIM_SOCKET", "off"}};
  return options;
}

TEST(Pool, ServesRepeatedAndTrainingShapedRequestsFromItsCache) {
  const ProgramRun run = run_program({program("pool_pairs")}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.err;
  const std::string replay = run.out.substr(0, run.out.find('\n'));
  const std::string pairs = run.out.substr(run.out.find("pairs"));
  EXPECT_LE(figure(pairs, "driver_allocs"), 2) << run.out;
  const long long requests = figure(replay, "requests");
  ASSERT_GT(requests, 17000) << run.out;
  EXPECT_LE(figure(replay, "driver_allocs") * 100, requests * 2) << run.out;
  EXPECT_LE(figure(replay, "peak_driver_bytes") * 100, figure(replay, "peak_in_use") * 110)
      << run.out;
}

class ReuseSafety : public ::testing::TestWithParam<const char*> {};

TEST_P(ReuseSafety, FreedMemoryIsNotReusedWhileQueuedWorkWritesIt) {
  const ProgramRun run = run_program({program("reuse_safety"), GetParam(), "150"}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
}

// Four sizes only: blocks go round through the threads' caches of the pool.
TEST_P(ReuseSafety, FreedMemoryIsNotReusedWhileQueuedWorkWritesItWhenSizesRepeat) {
  const ProgramRun run =
      run_program({program("reuse_safety"), GetParam(), "300", "repeating"}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
}

INSTANTIATE_TEST_SUITE_P(Streams, ReuseSafety,
                         ::testing::Values("legacy", "nonblocking", "streams", "threads",
                                           "per_thread", "per_thread_handle",
                                           "blocking_then_per_thread", "per_thread_threads",
                                           "blocking_streams", "green", "destroyed_nonblocking",
                                           "destroyed_blocking", "other_context"));

TEST(Pool, StreamsFromAnEntryPointWithoutAHookAreFencedByContextSynchronize) {
  RunOptions options = quiet();
  options.env["LD_PRELOAD"] =
      runfile("shim/libvramshim.so") + ":" + program("libunhooked_stream_creator.so");
  const ProgramRun run = run_program({program("reuse_safety"), "unhooked_creator", "150"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
  EXPECT_NE(run.err.find("vramshim: the program got cuStreamCreate_v99, which creates streams the "
                         "shim cannot see"),
            std::string::npos)
      << run.err;
}

// A helper that finds the driver's cuStreamCreate with dlsym(RTLD_NEXT, …) without wrapping it
// gets the hook: the pool sees its streams and fences them with events, not context synchronizes.
TEST(Pool, StreamsAHelperMakesThroughRtldNextAreSeen) {
  RunOptions options = quiet();
  options.env["LD_PRELOAD"] =
      runfile("shim/libvramshim.so") + ":" + program("libnext_door_streams.so");
  const ProgramRun run = run_program({program("reuse_safety"), "next_door", "150"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
  EXPECT_EQ(run.err.find("context synchronize"), std::string::npos) << run.err;
}

// A plugin dlopen'ed with RTLD_DEEPBIND calls the driver past every hook: its streams are unseen,
// and the pool fences with context synchronizes.
TEST(Pool, StreamsOfAPluginLoadedWithDeepbindAreFencedByContextSynchronize) {
  RunOptions options = quiet();
  options.env["DEEPBIND_PLUGIN"] = program("libdeepbind_streams.so");
  const ProgramRun run = run_program({program("reuse_safety"), "deepbind", "150"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
  EXPECT_NE(run.err.find("vramshim: libdeepbind_streams.so was dlopen'ed with RTLD_DEEPBIND: the "
                         "streams it creates and the memory it allocates bypass the shim; the pool "
                         "now fences freed memory with a context synchronize"),
            std::string::npos)
      << run.err;
}

// A green context made while another device's context is current: each pool synchronizes its own
// context for the blocks it made reusable by markers (it synchronized the caller's current one).
// (With two devices' contexts live the pools wait for events, and reuse nothing by a marker alone.)
TEST(Pool, AGreenContextMadeUnderAnotherDevicesContextFencesEachPoolsOwn) {
  RunOptions options = quiet();
  options.env["FAKECUDA_DEVICES"] = "2";
  const ProgramRun run = run_program({program("green_context_elsewhere")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted"), 0) << run.out;
}

// Another device's stream reaches the pool's memory (unified addressing, peer access), and no
// marker of the pool's context orders it: while another device has a live context, a freed block
// waits for its old owner's work to complete, whoever uses it next.
TEST(Pool, AnotherDevicesStreamNeverWritesABlockBeforeItsOldOwnerIsDone) {
  RunOptions options = quiet();
  options.env["FAKECUDA_DEVICES"] = "2";
  const ProgramRun run = run_program({program("reuse_safety"), "other_device", "60"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted rounds"), 0) << run.out;
}

// A block reused by a marker while its device was the only one, then first written on a second
// device's stream: the second device's arrival waits for the work queued before the free.
TEST(Pool, ASecondDevicesArrivalOrdersBlocksAMarkerAloneMadeReusable) {
  RunOptions options = quiet();
  options.env["FAKECUDA_DEVICES"] = "2";
  const ProgramRun run = run_program({program("other_device_after_reuse")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "reused"), 1) << run.out;
  EXPECT_EQ(figure(run.out, "corrupted"), 0) << run.out;
}

TEST(Pool, DoubleAndInteriorFreesGetTheDriversErrorAndDamageNothing) {
  for (bool shim : {false, true}) {
    RunOptions options = quiet();
    options.preload_shim = shim;
    const ProgramRun run = run_program({program("bad_frees")}, options);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    for (const char* key : {"double_free", "interior_free", "double_free_large"}) {
      EXPECT_EQ(figure(run.out, key), CUDA_ERROR_INVALID_VALUE) << key << " shim=" << shim;
    }
    EXPECT_EQ(figure(run.out, "damaged"), 0) << run.out;
    // The driver alone sees each bad free; under the shim none reaches it.
    EXPECT_EQ(figure(run.out, "driver_errors"), shim ? 0 : 3) << run.out;
  }
}

// More contexts made over a run than the pools' table has slots, one after another: each has a
// pool (a destroyed context's slot serves the next), and nothing is said.
TEST(Pool, ContextsMadeOneAfterAnotherAreAllPooled) {
  const std::string directory = short_temp_dir();
  RunOptions options = reporting_to(directory + "/report.json");
  const ProgramRun run = run_program({program("many_contexts"), "300"}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.out, "contexts=300\n");
  EXPECT_EQ(run.err.find("CUDA contexts"), std::string::npos) << run.err;
  const nlohmann::json device = read_report(directory + "/report.json")["devices"][0];
  EXPECT_EQ(device.value("driver_alloc_calls", 0u), 300u) << "a pooled segment per context";
}

// More contexts alive at once than the table has slots: those made while it is full are served by
// the driver, and one warning line says so.
TEST(Pool, ContextsPastTheTableAreServedUnpooledWithOneWarning) {
  const ProgramRun run = run_program({program("many_contexts"), "300", "at-once"}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(run.out, "contexts=300\n");
  const std::string warning = "vramshim: the process has more than 256 CUDA contexts at once";
  const size_t first = run.err.find(warning);
  EXPECT_NE(first, std::string::npos) << run.err;
  EXPECT_EQ(run.err.find(warning, first + 1), std::string::npos) << run.err;
}

TEST(Pool, AStreamOrderedFreeOfAPooledBlockIsThePools) {
  const ProgramRun run = run_program({program("pooled_free_async")}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "free_async"), CUDA_SUCCESS) << run.out;
  EXPECT_EQ(figure(run.out, "interior_free_async"), CUDA_ERROR_INVALID_VALUE) << run.out;
  EXPECT_EQ(figure(run.out, "damaged"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "driver_free_async"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "driver_errors"), 0) << run.out;
}

// With the pool off, a stream-ordered free of cuMemAlloc memory went to the driver past the pool,
// which kept the allocation live in its figures and charged to VRAMSHIM_LIMIT for good (the
// driver's same address handed out again was then counted once for two).
TEST(Pool, AStreamOrderedFreeWithThePoolOffEndsThePoolsLiveAllocation) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_POOL"] = "off";
  // The program's four 4 KiB blocks: the one it allocates after the stream-ordered free fits only
  // once that free is counted.
  options.env["VRAMSHIM_LIMIT"] = "16KiB";
  const ProgramRun run = run_program({program("pooled_free_async")}, options);
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "free_async"), CUDA_SUCCESS) << run.out;
  EXPECT_EQ(figure(run.out, "damaged"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "driver_errors"), 1) << "the interior pointer's, only; " << run.out;
}

TEST(Pool, OutOfMemoryEmptiesTheCacheAndRetries) {
  RunOptions options = quiet();
  options.env["FAKECUDA_CAPACITY"] = "1GiB";
  const ProgramRun run = run_program({program("oom_and_limit"), "oom"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "600MiB result"), 0) << run.out;
  // The 700 MiB cached in the pool counts as free.
  EXPECT_GE(figure(run.out, "free"), 1000ll << 20) << run.out;
}

// Memory the pool caches must not make an allocation fail that it does not serve itself.
TEST(Pool, OutOfMemoryOfAnyKindEmptiesTheCacheAndRetries) {
  for (const char* mode : {"oom_async", "oom_vmm", "oom_legacy", "oom_context"}) {
    RunOptions options = quiet();
    options.env["FAKECUDA_CAPACITY"] = "1GiB";
    const ProgramRun run = run_program({program("oom_and_limit"), mode}, options);
    EXPECT_EQ(run.exit_code, 0) << mode << run.out << run.err;
    EXPECT_EQ(figure(run.out, "600MiB result"), 0) << mode << run.out;
  }
}

// Nor may the freed memory the driver's stream-ordered pools keep for the program (a release
// threshold set high, as PyTorch's cudaMallocAsync backend and RMM do): a cuMemAlloc the driver
// refuses is retried after they are trimmed, as after a flush.
TEST(Pool, OutOfMemoryTrimsTheStreamOrderedPoolsAndRetries) {
  RunOptions options = quiet();
  options.env["FAKECUDA_CAPACITY"] = "1GiB";
  for (const char* mode : {"kept_by_stream_ordered_pool", "vmm_kept_by_stream_ordered_pool"}) {
    const ProgramRun run = run_program({program("oom_and_limit"), mode}, options);
    EXPECT_EQ(run.exit_code, 0) << mode << run.out << run.err;
    EXPECT_EQ(figure(run.out, "600MiB result"), 0) << mode << run.out;
  }
}

TEST(Pool, LimitCapsAllocationsAndIsReportedAsTotal) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_LIMIT"] = "256MiB";
  const ProgramRun run = run_program({program("oom_and_limit"), "limit"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "total"), 256ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "device_total"), 256ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "over_result"), 2) << run.out;  // CUDA_ERROR_OUT_OF_MEMORY
  EXPECT_EQ(figure(run.out.substr(run.out.find("after")), "free"), 56ll << 20) << run.out;
}

// Stream-ordered and VMM device memory count against the cap with the pool's (DESIGN.md: a
// per-device cap on bytes in use), so a job using PyTorch's cudaMallocAsync backend or expandable
// segments stays under it too.
TEST(Pool, LimitCountsMemoryTheDriverServesItself) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_LIMIT"] = "256MiB";
  const ProgramRun run = run_program({program("oom_and_limit"), "limit_direct"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "after_async free"), 56ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "alloc_over"), 2) << run.out;  // CUDA_ERROR_OUT_OF_MEMORY
  EXPECT_EQ(figure(run.out, "create_over"), 2) << run.out;
  EXPECT_EQ(figure(run.out, "async_over"), 2) << run.out;
  EXPECT_EQ(figure(run.out, "after_free free"), 256ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "mapped_over"), 2) << run.out;
  EXPECT_EQ(figure(run.out, "after_unmap free"), 256ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "again"), 0) << run.out;
  // The refusals are the limit's, and say what it counted.
  EXPECT_NE(run.err.find("this process has 200.0 MiB in use (200.0 MiB of it stream-ordered"),
            std::string::npos)
      << run.err;
}

// Blocks freed to the thread caches just before count as in use until their credit is folded back,
// which the pool does before it refuses a charge of its own: a stream-ordered allocation after them
// was refused, with an explanation that said 0 B were in use.
TEST(Pool, LimitCountsFreedSmallBlocksAsFreeForTheDriversMemoryToo) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_LIMIT"] = "256MiB";
  const ProgramRun run =
      run_program({program("oom_and_limit"), "limit_after_small_frees"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "async_after_frees"), 0) << run.out;
}

// A free the driver refuses leaves the memory allocated, so it stays counted.
TEST(Pool, LimitKeepsCountingMemoryWhoseFreeTheDriverRefused) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_LIMIT"] = "256MiB";
  const ProgramRun run = run_program({program("oom_and_limit"), "limit_refused_free"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(figure(run.out, "refused_free"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "after_refused free"), 56ll << 20) << run.out;
  EXPECT_EQ(figure(run.out, "after_free free"), 256ll << 20) << run.out;
}

// ... and attributed: the report at exit names its site with the 200 MiB (the attribution ended
// before the driver's call, and stayed ended when the driver refused).
TEST(Pool, AFreeTheDriverRefusedLeavesTheAllocationAttributed) {
  const std::string directory = short_temp_dir();
  RunOptions options = quiet();
  options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
  const ProgramRun run = run_program({program("oom_and_limit"), "refused_free_kept"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(figure(run.out, "refused_free"), 0) << run.out;
  const nlohmann::json report = read_report(directory + "/report.json");
  int64_t live = 0;
  for (const auto& site : report["sites"]) live += site["live_bytes"].get<int64_t>();
  EXPECT_EQ(live, 200ll << 20) << report["sites"].dump() << run.err;
  // The device's figures say what of its memory the driver serves itself (what the cap counts).
  EXPECT_EQ(report["devices"][0]["direct_in_use_bytes"], 200ll << 20) << report["devices"].dump();
}

// A device number the driver refuses is no device of the process's figures.
TEST(Pool, AnUnknownDevicesAllocationAddsNoDeviceToTheReport) {
  const std::string directory = short_temp_dir();
  RunOptions options = quiet();
  options.env["VRAMSHIM_REPORT"] = directory + "/report.json";
  const ProgramRun run = run_program({program("oom_and_limit"), "limit_unknown_device"}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(figure(run.out, "unknown_device"), 0) << run.out;
  const nlohmann::json devices = read_report(directory + "/report.json")["devices"];
  ASSERT_EQ(devices.size(), 1u) << devices;
  EXPECT_EQ(devices[0]["device"], 0) << devices;
  EXPECT_TRUE(devices[0]["direct_in_use_bytes"].is_null()) << devices;  // none served directly
}

void expect_capture_stays_valid(const std::vector<std::string>& arguments) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_SOCKET"] = short_temp_dir() + "/capture.sock";
  std::vector<std::string> argv = {program("capture_while_pooling")};
  argv.insert(argv.end(), arguments.begin(), arguments.end());
  const ProgramRun run = run_program(argv, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "end_capture"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "invalidations"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "flush_deferred"), 1) << run.out;
  EXPECT_EQ(figure(run.out, "released_in_capture"), 0) << run.out;
  EXPECT_GT(figure(run.out, "released_after"), 0) << run.out;
}

// A flush asked for during a capture answers at once (it held the control thread, and a SIGTERM's
// report, until the capture ended: 12 s for a 12 s capture) and is made once the capture ended.
TEST(Pool, GlobalCaptureStaysValidWhileThePoolWorksAndAFlushWaitsForItsEnd) {
  expect_capture_stays_valid({});
}

// A pool call checked against the capture count before a capture began, and made after it, lands
// in the capture: 30 of 200,000 thread-local captures were invalidated that way.
TEST(Pool, CapturesBeginningWhileAnotherThreadAllocatesStayValid) {
  const ProgramRun run = run_program({program("captures_beside_allocations")}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "begun"), 200000) << run.out;
  EXPECT_EQ(figure(run.out, "failed_ends"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "invalidations"), 0) << run.out;
}

TEST(Pool, ANewStreamDuringACaptureWaitsForTheWorkBeforeTheFreesOfItsBlocks) {
  const ProgramRun run = run_program({program("stream_during_capture")}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "synchronizes_during"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "invalidations"), 0) << run.out;
}

// cuMemAlloc and cuMemFree during a capture are the driver's to refuse, by the capture's mode and
// the calling thread's: the pool served them from its cache, so a capture the driver invalidates
// went on, and its graph kept using memory the pool handed out again.
TEST(Pool, CallsACaptureForbidsAreRefusedAsTheDriverRefusesThem) {
  std::string answers[2];
  for (bool shim : {false, true}) {
    RunOptions options = quiet();
    options.preload_shim = shim;
    const ProgramRun run = run_program({program("pool_calls_in_captures")}, options);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    EXPECT_EQ(figure(run.out, "damaged"), 0) << run.out;
    answers[shim] = run.out;
  }
  EXPECT_EQ(answers[1], answers[0]) << "under the shim, then without";
  EXPECT_NE(answers[0].find("global_other_thread: alloc=900 free=900 end=901"), std::string::npos)
      << answers[0];
  EXPECT_NE(answers[0].find("global_other_thread_relaxed: alloc=0 free=0 end=0"), std::string::npos)
      << answers[0];
}

// Whether a capture allows a thread's calls is asked of the driver once per thread and state of
// the captures: asking frees, which waits for the device's work (every pool hit during a capture
// became a wait for the device: 10 pairs took 4.1 s beside 100 ms kernels, 1.1 s without the shim).
TEST(Pool, ACaptureThatAllowsAThreadsCallsIsAskedAboutOnce) {
  const ProgramRun run = run_program({program("pool_calls_in_captures"), "pairs"}, quiet());
  ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "pairs"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "driver_allocations"), 1) << run.out;
}

TEST(Pool, ACaptureIntoAGraphStaysValidToo) { expect_capture_stays_valid({"to_graph"}); }

// A capture whose stream or context went away without cuStreamEndCapture (the driver ends it with
// them) counted for good: no freed block was reused again, and the pool failed allocations the
// driver alone serves (24 of 40 rounds of 64 MiB on a 1 GiB device).
TEST(Pool, ACaptureEndedWithItsStreamOrContextStopsCounting) {
  for (const char* how : {"context_destroyed", "primary_reset", "stream_destroyed"}) {
    RunOptions options = quiet();
    options.env["FAKECUDA_CAPACITY"] = "1GiB";
    const ProgramRun run = run_program({program("captures_lost_with_their_stream"), how}, options);
    EXPECT_EQ(run.exit_code, 0) << how << run.out << run.err;
    EXPECT_EQ(figure(run.out, "failures"), 0) << how << run.out;
    EXPECT_LE(figure(run.out, "driver_allocations"), 2) << how << run.out;
  }
}

// Every thread's per-thread stream is one handle: the end of one context's capture on it took the
// record of another context's, and that context's teardown then uncounted the other capture too,
// which the pool invalidated (its end: CUDA_ERROR_STREAM_CAPTURE_INVALIDATED).
TEST(Pool, PerThreadCapturesOfTwoContextsAreToldApart) {
  for (const char* how : {"context_destroyed", "primary_reset"}) {
    RunOptions options = quiet();
    options.env["FAKECUDA_DEVICES"] = "2";
    const ProgramRun run =
        run_program({program("per_thread_captures_of_two_contexts"), how}, options);
    EXPECT_EQ(run.exit_code, 0) << how << run.out << run.err;
    EXPECT_EQ(figure(run.out, "first_end"), 0) << how << run.out;
    EXPECT_EQ(figure(run.out, "invalidations"), 0) << how << run.out;
  }
}

// A stream destroyed within a capture could have no event recorded: its work is waited for by one
// synchronize, not by one at every reuse from then on (before: 66 in 200 rounds).
TEST(Pool, AStreamDestroyedInACaptureIsWaitedForOnce) {
  const ProgramRun run = run_program({program("stream_destroyed_in_capture")}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "changed"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "synchronizes_in_churn"), 0) << run.out;
}

// The driver refuses cuCtxDestroy of a primary context: the pool, dropped before the call, forgot
// the live blocks, and a free of one reached the driver as its segment's base, freeing the block
// beside it too.
TEST(Pool, ATeardownTheDriverRefusesLeavesThePoolAsItWas) {
  const ProgramRun run = run_program({program("refused_context_destroy")}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(figure(run.out, "destroy"), 0) << "the driver destroyed it: " << run.out;
  EXPECT_EQ(figure(run.out, "free"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "changed"), 0) << run.out;
}

TEST(Pool, ContextTeardownAndForkLeaveNothingBehind) {
  const ProgramRun run = run_program({program("contexts_teardown")}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_NE(run.out.find("after destroy live=0 errors=0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("after reset errors=0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("second reset segments handed back=1 errors=0"), std::string::npos)
      << run.out;
  EXPECT_NE(run.out.find("child alloc result="), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("end live=0 errors=0 child=0"), std::string::npos) << run.out;
}

TEST(Pool, TheLastDetachOfAContextDropsItsPool) {
  for (bool shim : {false, true}) {
    RunOptions options = quiet();
    options.preload_shim = shim;
    options.env["FAKECUDA_CAPACITY"] = "64MiB";
    options.env["VRAMSHIM_SOCKET"] = short_temp_dir() + "/detach.sock";
    const ProgramRun run = run_program({program("context_detach")}, options);
    ASSERT_EQ(run.exit_code, 0) << run.out << run.err;
    if (shim) {
      EXPECT_EQ(figure(run.out, "served_after_first_detach"), 1) << run.out;
      EXPECT_EQ(figure(run.out, "reserved_after_last_detach"), 0) << run.out;
    }
    EXPECT_EQ(figure(run.out, "damaged"), 0) << "shim=" << shim << " " << run.out;
    EXPECT_EQ(figure(run.out, "errors"), 0) << "shim=" << shim << " " << run.out;
    EXPECT_NE(run.out.find("end live=0 errors=0"), std::string::npos) << run.out;
  }
}

TEST(Pool, AGreenContextKeepsThePrimaryContextsPoolAlive) {
  const ProgramRun run = run_program({program("green_context_retain")}, quiet());
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_GE(figure(run.out, "context_synchronizes"), 1) << run.out;
  EXPECT_NE(run.out.find("free_a=0 free_b=0 errors=0"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("end live=0 errors=0"), std::string::npos) << run.out;
}

TEST(Pool, MemoryCarvedFromASegmentIsNotExportedToAnotherProcess) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_LOG"] = "warn";
  const ProgramRun run = run_program({program("ipc_export")}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "second_inside"), 1) << run.out;
  EXPECT_EQ(figure(run.out, "export_start"), CUDA_SUCCESS) << run.out;
  EXPECT_EQ(figure(run.out, "export_inside"), CUDA_ERROR_INVALID_VALUE) << run.out;
  EXPECT_EQ(figure(run.out, "export_driver_base"), CUDA_SUCCESS) << run.out;
  EXPECT_NE(run.err.find("cuIpcGetMemHandle refused"), std::string::npos) << run.err;
}

TEST(Pool, FlushBySocketAndSignalWhileFourThreadsAllocate) {
  RunOptions options = quiet();
  options.env["VRAMSHIM_SOCKET"] = short_temp_dir() + "/flush.sock";
  const ProgramRun run = run_program({program("flush_under_load")}, options);
  EXPECT_EQ(run.exit_code, 0) << run.out << run.err;
  EXPECT_EQ(figure(run.out, "corrupted"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "errors"), 0) << run.out;
  EXPECT_EQ(figure(run.out, "socket_flushes"), 10) << run.out;
  // After the last flush the driver holds exactly what the pool reserves for the live blocks.
  const long long reserved_after = figure(run.out, "reserved_after");
  EXPECT_EQ(figure(run.out, "driver_live"), reserved_after) << run.out;
  EXPECT_GE(reserved_after, figure(run.out, "in_use_after")) << run.out;
  EXPECT_EQ(figure(run.out, "reserved_before") - reserved_after, figure(run.out, "released"))
      << run.out;
  EXPECT_NE(run.out.find("after freeing all: driver_live=0"), std::string::npos) << run.out;
}

}  // namespace
}  // namespace vramshim::testing
