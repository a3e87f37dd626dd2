// The program closes the pipe libunwind opened at its start and reuses its numbers for files of
// its own: the next capture gives libunwind up itself, before libunwind can test an address
// through the program's files, whether or not the control thread has run since (none runs here).
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "shim/attribution/module_range.h"
#include "shim/attribution/stack_capture.h"
#include "tests/support/open_descriptors.h"
#include "tests/unit/attribution/jit_frame.h"

namespace vramshim::attribution {
namespace {

constexpr char kContent[] = "the program's own data\n";

struct Through {
  const StackCapture* capture;
  int frames;
};

void capture_here(void* argument) {
  auto* through = static_cast<Through*>(argument);
  StackCapture::Buffer buffer;
  through->frames = through->capture->capture(buffer).depth;
}

TEST(LibunwindPipe, ACaptureGivesLibunwindUpOnceTheProgramTookItsPipe) {
  const std::set<int> before = testing::open_descriptors();
  const StackCapture capture(64, Unwinder::kLibunwind, ModuleRange::of_this_module());
  ASSERT_EQ(preferred_unwinder(), Unwinder::kLibunwind);
  std::vector<int> pipe_ends;
  for (const int fd : testing::open_descriptors()) {
    if (before.count(fd) == 0) pipe_ends.push_back(fd);
  }
  ASSERT_EQ(pipe_ends.size(), 2u) << "libunwind's pipe";
  char directory[] = "/tmp/vramshim-libunwind-pipe-XXXXXX";
  ASSERT_NE(mkdtemp(directory), nullptr);
  for (const int fd : pipe_ends) {
    const std::string path = std::string(directory) + "/file" + std::to_string(fd);
    const int file = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0600);
    ASSERT_GE(file, 0);
    ASSERT_EQ(write(file, kContent, sizeof(kContent) - 1),
              static_cast<ssize_t>(sizeof(kContent) - 1));
    ASSERT_EQ(lseek(file, 0, SEEK_SET), 0);
    ASSERT_EQ(dup2(file, fd), fd);
    close(file);
  }
  // Past the captures' interval between checks of the pipe.
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  // A capture through a frame without unwind information, where libunwind tests addresses
  // through its pipe.
  Through through{&capture, 0};
  ASSERT_TRUE(testing::call_from_jit_frame(capture_here, &through));
  EXPECT_GT(through.frames, 0);
  for (const int fd : pipe_ends) {
    char buffer[sizeof(kContent)] = {};
    EXPECT_EQ(lseek(fd, 0, SEEK_CUR), 0) << "descriptor " << fd << " was read or written";
    EXPECT_EQ(pread(fd, buffer, sizeof(buffer), 0), static_cast<ssize_t>(sizeof(kContent) - 1));
    EXPECT_STREQ(buffer, kContent) << "descriptor " << fd;
  }
  // The control thread's check says so once, for its warning.
  EXPECT_TRUE(libunwind_pipe_lost());
  EXPECT_FALSE(libunwind_pipe_lost());
  for (const int fd : pipe_ends) {
    close(fd);
    unlink((std::string(directory) + "/file" + std::to_string(fd)).c_str());
  }
  rmdir(directory);
}

}  // namespace
}  // namespace vramshim::attribution
