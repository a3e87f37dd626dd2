// A process SIGKILLed while writing a report never leaves a partial file at the final path, and the
// next report in that directory removes its temporary; names planted in a shared directory neither
// stop a report nor redirect it; a dlopen stuck in a library's constructor does not hold a report.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <link.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <string>
#include <thread>

#include "shim/report/atomic_file.h"
#include "shim/report/report_writer.h"
#include "tests/unit/report/report_test_support.h"

namespace vramshim::report {
namespace {

off_t size_of(const std::string& path);

// The child's report directory, from when its writer must stop part-way (empty: never).
std::string g_stop_in;

// The frames of the child's report, named through dl_iterate_phdr once the process's command line
// is in the temporary file (shim/report/dynamic_symbols.cc): the writer, linked into this test,
// calls this definition, which stops it there for good. Everyone else (the module map before the
// file is opened, the unwinder) gets the loader's.
extern "C" int dl_iterate_phdr(int (*callback)(dl_phdr_info*, size_t, void*), void* data) {
  using Iterate = int (*)(int (*)(dl_phdr_info*, size_t, void*), void*);
  static const auto loader = reinterpret_cast<Iterate>(dlsym(RTLD_NEXT, "dl_iterate_phdr"));
  if (!g_stop_in.empty()) {
    for (const std::string& name : list_directory(g_stop_in)) {
      if (name.rfind(".killed.json.vramshim-tmp.", 0) == 0 &&
          size_of(g_stop_in + "/" + name) >= (16 << 20)) {
        for (;;) pause();
      }
    }
  }
  return loader(callback, data);
}

// A report with one allocation whose stack is in this binary, and a command line of 16 MiB.
ReportInputs report_with_frames(const attribution::Tracker& tracker) {
  ReportInputs inputs;
  inputs.reason = "signal";
  inputs.process = read_process_info(std::nullopt);
  inputs.process.cmdline.assign(16, std::string(1 << 20, 'x'));
  inputs.tracker = &tracker;
  return inputs;
}

attribution::TrackerOptions own_frames_kept() {
  attribution::TrackerOptions options;
  options.own_module = {};  // keep this binary's frames: the writer must name them
  return options;
}

// In the child: writes a report that stops after its first 16 MiB (the command line) reached the
// temporary file, at the naming of its frames.
[[noreturn]] void write_report_that_cannot_finish(const std::string& path) {
  attribution::Tracker tracker(own_frames_kept());
  tracker.on_alloc(0x1000, 4096, attribution::AllocationKind::kDevice, 0, 0);
  g_stop_in = path.substr(0, path.rfind('/'));
  write_report(path, report_with_frames(tracker));
  _exit(4);  // not reached: the writer is stopped
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
      if (name.rfind(".killed.json.vramshim-tmp.", 0) == 0 &&
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

  // The next report written in the directory, by any process, cleans the dead writer's leftover.
  ReportInputs inputs;
  inputs.reason = "exit";
  inputs.process = read_process_info(std::nullopt);
  ASSERT_EQ(write_report(directory + "/next.json", inputs), "");
  EXPECT_EQ(size_of(temporary), -1) << "the killed writer's temporary is still there";
}

// A library's constructor that never returns holds the loader's lock (dlopen): a report names its
// frames without that lock (dladdr once waited for it for ever, part-way through the file).
TEST(AtomicWrite, ADlopenStuckInAConstructorDoesNotHoldAReport) {
  const std::string directory = make_test_directory();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    attribution::Tracker tracker(own_frames_kept());
    tracker.on_alloc(0x1000, 4096, attribution::AllocationKind::kDevice, 0, 0);
    int ready[2];
    if (pipe(ready) != 0) _exit(2);
    setenv("VRAMSHIM_TEST_READY_FD", std::to_string(ready[1]).c_str(), 1);
    std::thread([] { dlopen("tests/unit/report/libblocking_constructor.so", RTLD_NOW); }).detach();
    char byte;
    if (read(ready[0], &byte, 1) != 1) _exit(3);
    _exit(write_report(directory + "/stuck.json", report_with_frames(tracker)).empty() ? 0 : 5);
  }
  int status = 0;
  for (int waited = 0; waited < 3000 && waitpid(child, &status, WNOHANG) == 0; ++waited) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  if (waitpid(child, &status, WNOHANG) == 0) {
    kill(child, SIGKILL);
    waitpid(child, &status, 0);
    FAIL() << "the report waited for the loader's lock for 30 s";
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_GT(size_of(directory + "/stuck.json"), 16 << 20);
}

ReportInputs small_report() {
  ReportInputs inputs;
  inputs.reason = "exit";
  inputs.process = read_process_info(std::nullopt);
  return inputs;
}

void write_file(const std::string& path, const std::string& text) { std::ofstream(path) << text; }

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

TEST(AtomicWrite, PlantedTemporaryNamesNeitherStopNorRedirectAReport) {
  const std::string directory = make_test_directory();
  const std::string victim = directory + "/victim.txt";
  write_file(victim, "precious");
  // Every name an attacker could predict from the pid, as files and as links to the victim.
  const std::string pid = std::to_string(getpid());
  for (int n = 0; n < 100; ++n) {
    const std::string suffix = pid + "." + std::to_string(n);
    write_file(directory + "/.job.json.tmp." + suffix, "planted");
    ASSERT_EQ(symlink(victim.c_str(), (directory + "/.job.json.vramshim-tmp." + suffix).c_str()),
              0);
  }
  ASSERT_EQ(write_report(directory + "/job.json", small_report()), "");
  EXPECT_EQ(read_json(directory + "/job.json")["reason"], "exit");
  EXPECT_EQ(read_file(victim), "precious");
}

TEST(AtomicWrite, ALinkOrADeviceAtThePathIsNeitherReplacedNorWrittenThrough) {
  const std::string directory = make_test_directory();
  const std::string target = directory + "/target.txt";
  write_file(target, "precious");
  const std::string link = directory + "/report.json";
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  EXPECT_EQ(write_report(link, small_report()),
            link + " is a symbolic link: a report replaces only a regular file");
  struct stat after;
  ASSERT_EQ(lstat(link.c_str(), &after), 0);
  EXPECT_TRUE(S_ISLNK(after.st_mode));
  EXPECT_EQ(read_file(target), "precious");
  EXPECT_EQ(write_report("/dev/null", small_report()),
            "/dev/null is not a regular file: a report replaces only a regular file");
}

TEST(AtomicWrite, KeepsTemporariesOfRunningWritersAndOfOtherUsers) {
  const std::string directory = make_test_directory();
  const pid_t running = fork();  // a live writer
  ASSERT_GE(running, 0);
  if (running == 0) {
    pause();
    _exit(0);
  }
  const pid_t dead = fork();
  ASSERT_GE(dead, 0);
  if (dead == 0) _exit(0);
  ASSERT_EQ(waitpid(dead, nullptr, 0), dead);

  const std::string here = "@" + pid_namespace_tag();
  const std::string live_one =
      directory + "/.a.json.vramshim-tmp." + std::to_string(running) + here + ".1";
  const std::string dead_one =
      directory + "/.b.json.vramshim-tmp." + std::to_string(dead) + here + ".2";
  const std::string foreign =
      directory + "/.c.json.vramshim-tmp." + std::to_string(dead) + here + ".3";
  const std::string link =
      directory + "/.d.json.vramshim-tmp." + std::to_string(dead) + here + ".4";
  const std::string unrelated = directory + "/.e.json.tmp." + std::to_string(dead) + here + ".5";
  // A writer in another container or on another node sharing the directory: its pid is not ours
  // to look up, however dead it looks here.
  const std::string elsewhere =
      directory + "/.f.json.vramshim-tmp." + std::to_string(dead) + "@0123456789abcdef.6";
  for (const std::string& file : {live_one, dead_one, foreign, unrelated, elsewhere}) {
    write_file(file, "x");
  }
  ASSERT_EQ(symlink(unrelated.c_str(), link.c_str()), 0);
  const bool can_chown = chown(foreign.c_str(), 65534, 65534) == 0;  // as root in CI

  ASSERT_EQ(write_report(directory + "/report.json", small_report()), "");
  kill(running, SIGKILL);
  waitpid(running, nullptr, 0);
  EXPECT_EQ(size_of(dead_one), -1) << "a dead writer's temporary was kept";
  EXPECT_EQ(size_of(live_one), 1) << "a running writer's temporary was removed";
  if (can_chown) {
    EXPECT_EQ(size_of(foreign), 1) << "another user's file was removed";
  }
  struct stat info {};
  EXPECT_EQ(lstat(link.c_str(), &info), 0) << "a link was removed";
  EXPECT_EQ(size_of(unrelated), 1);
  EXPECT_EQ(size_of(elsewhere), 1) << "a writer's temporary from another pid namespace was removed";
}

}  // namespace
}  // namespace vramshim::report
