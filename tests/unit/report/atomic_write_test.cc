// A process SIGKILLed while writing a report never leaves a partial file at the final path.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>

#include "shim/report/report_writer.h"
#include "tests/unit/report/report_test_support.h"

namespace vramshim::report {
namespace {

// In the child: holds the loader's lock in another thread, then writes a report whose first 16 MiB
// (the command line) reach the temporary file before the writer blocks at the frames' dladdr.
[[noreturn]] void write_report_that_cannot_finish(const std::string& path) {
  attribution::TrackerOptions options;
  options.own_module = {};  // keep this binary's frames: the writer must reach dladdr
  attribution::Tracker tracker(options);
  tracker.on_alloc(0x1000, 4096, 4096, attribution::AllocationKind::kDevice, 0, 0);
  ReportInputs inputs;
  inputs.reason = "signal";
  inputs.process = read_process_info(std::nullopt);
  inputs.process.cmdline.assign(16, std::string(1 << 20, 'x'));
  inputs.tracker = &tracker;

  // Everything that needs the loader (libunwind, /proc reads) is done; now take its lock away.
  int ready[2];
  if (pipe(ready) != 0) _exit(2);
  setenv("VRAMSHIM_TEST_READY_FD", std::to_string(ready[1]).c_str(), 1);
  std::thread([] { dlopen("tests/unit/report/libblocking_constructor.so", RTLD_NOW); }).detach();
  char byte;
  if (read(ready[0], &byte, 1) != 1) _exit(3);
  write_report(path, inputs);
  _exit(4);  // not reached: the writer is blocked
}

off_t size_of(const std::string& path) {
  struct stat status {};
  return stat(path.c_str(), &status) == 0 ? status.st_size : -1;
}

TEST(AtomicWrite, KilledWriterLeavesNoFileAtTheFinalPath) {
  const std::string directory = make_test_directory();
  const std::string path = directory + "/killed.json";
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) write_report_that_cannot_finish(path);

  // Wait until the temporary file holds the command line, i.e. the writer is mid-file.
  std::string temporary;
  for (int attempt = 0; attempt < 3000 && temporary.empty(); ++attempt) {
    for (const std::string& name : list_directory(directory)) {
      if (name.rfind(".killed.json.tmp.", 0) == 0 &&
          size_of(directory + "/" + name) >= (16 << 20)) {
        temporary = directory + "/" + name;
      }
    }
    if (temporary.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(kill(child, SIGKILL), 0);
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_FALSE(temporary.empty()) << "the writer never got part-way through its file";
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(size_of(path), -1) << "a partial report is at the final path";
}

}  // namespace
}  // namespace vramshim::report
