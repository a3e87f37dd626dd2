// Under the shim, programs behave exactly as without it, and the shim exports only its
// hooks.
#include <gtest/gtest.h>

#include <regex>
#include <sstream>

#include "tests/integration/shim_runner.h"

namespace vramshim::testing {
namespace {

RunOptions plain(bool preload) {
  RunOptions options;
  options.preload_shim = preload;
  return options;
}

TEST(Unaffected, ExceptionsThroughSeveralFramesBehaveAsWithoutTheShim) {
  const std::string exe = runfile("tests/integration/programs/exceptions");
  const ProgramRun without = run_program({exe}, plain(false));
  const ProgramRun with = run_program({exe}, plain(true));
  ASSERT_EQ(without.exit_code, 0);
  EXPECT_EQ(with.exit_code, 0) << with.err;
  EXPECT_EQ(with.out, without.out);
  EXPECT_EQ(with.out, "caught 101\n");
  EXPECT_EQ(with.err, "");
}

TEST(Unaffected, ForkAndExecWorkAndTheExecdChildKeepsThePreload) {
  const ProgramRun run = run_program({runfile("tests/integration/programs/fork_exec")});
  ASSERT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.out.find("exec'd child preload=set"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("child status=0"), std::string::npos) << run.out;
}

TEST(Unaffected, ProcessesThatNeverTouchCudaAreLeftAlone) {
  const ProgramRun true_run = run_program({"/bin/true"});
  EXPECT_EQ(true_run.exit_code, 0);
  EXPECT_EQ(true_run.err, "");
  // The shim must not load or initialize the driver in a process that does not use it.
  const ProgramRun python = run_program(
      {"/usr/bin/python3", "-c",
       "import sys; print(sum(1 for l in open('/proc/self/maps') if 'libcuda' in l), 6 * 7)"});
  EXPECT_EQ(python.exit_code, 0) << python.err;
  EXPECT_EQ(python.out, "0 42\n");
  EXPECT_EQ(python.err, "");
}

TEST(Exports, OnlyTheHooksDlsymDlopenAndTheCopyMarkAreExported) {
  const ProgramRun nm = run_program(
      {"/usr/bin/nm", "-D", "--defined-only", runfile("shim/libvramshim.so")}, plain(false));
  ASSERT_EQ(nm.exit_code, 0) << nm.err;
  const std::regex allowed(
      "[0-9a-f]+ ([TW] (cu[A-Z][A-Za-z0-9_]*|dlsym|dlopen)|R vramshim_shim_copy)");
  std::istringstream lines(nm.out);
  std::string line;
  int hooks = 0;
  while (std::getline(lines, line)) {
    EXPECT_TRUE(std::regex_match(line, allowed)) << line;
    ++hooks;
  }
  EXPECT_GT(hooks, 40);
}

TEST(Exports, TheShimNeedsOnlyTheCLibrary) {
  const ProgramRun readelf =
      run_program({"/usr/bin/readelf", "-d", runfile("shim/libvramshim.so")}, plain(false));
  ASSERT_EQ(readelf.exit_code, 0);
  const std::regex needed(R"(\(NEEDED\)\s+Shared library: \[([^\]]+)\])");
  const std::regex allowed(
      R"(libc\.so\.6|libm\.so\.6|libdl\.so\.2|libpthread\.so\.0|ld-linux-x86-64\.so\.2)");
  int count = 0;
  for (std::sregex_iterator it(readelf.out.begin(), readelf.out.end(), needed), end; it != end;
       ++it) {
    EXPECT_TRUE(std::regex_match((*it)[1].str(), allowed)) << (*it)[1].str();
    ++count;
  }
  EXPECT_GT(count, 0);
}

// glibc keeps 512 B of static TLS for libraries loaded after the program starts
// (rtld.optional_static_tls); a library whose thread-locals do not fit gets dynamic TLS, and each
// hook pays for it (the pool-hit pair 15 % more when a 264 B list of thread caches was added): the
// benchmarks dlopen the shim, and so may a program. Preloaded, the shim is in static TLS anyway.
TEST(Exports, TheShimsThreadLocalsFitInTheStaticTlsKeptForLibrariesLoadedLater) {
  const ProgramRun readelf =
      run_program({"/usr/bin/readelf", "-lW", runfile("shim/libvramshim.so")}, plain(false));
  ASSERT_EQ(readelf.exit_code, 0);
  std::smatch tls;
  // Type, Offset, VirtAddr, PhysAddr, FileSiz, MemSiz.
  ASSERT_TRUE(std::regex_search(readelf.out, tls,
                                std::regex(R"(TLS\s+\S+\s+\S+\s+\S+\s+\S+\s+(0x[0-9a-f]+))")));
  EXPECT_LE(std::stoul(tls[1].str(), nullptr, 16), 512u) << "the shim's thread-locals, bytes";
}

}  // namespace
}  // namespace vramshim::testing
